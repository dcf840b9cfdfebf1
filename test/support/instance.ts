import type { DescService } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import type { Logger } from "@meter/lib/logger";
import { rpcClient, serveRpc, type RpcServer, type ServiceModule } from "@meter/lib/rpc";

/** One replica of a service in this process: its module, served over real gRPC, and a client of it. */
export interface Instance<S extends DescService, M extends ServiceModule> {
  module: M;
  server: RpcServer;
  client: Client<S>;
  /** Stops its background work, then its server. */
  close(): Promise<void>;
}

/** Serves `module` on a free port, starts its background work, and returns it with a client. */
export async function serveInstance<S extends DescService, M extends ServiceModule>(service: S, module: M, logger: Logger): Promise<Instance<S, M>> {
  const server = await serveRpc({ modules: [module], port: 0, logger });
  await module.start?.();
  return {
    module,
    server,
    client: rpcClient(service, server.url),
    async close() {
      await module.stop?.();
      await server.close();
    },
  };
}
