import http2 from "node:http2";
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  type Client,
  type ConnectRouter,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "@meter/proto/grpc/health/v1/health_pb";
import { REQUEST_ID_HEADER, currentContext, runWithContext } from "./context.ts";
import type { Logger } from "./logger.ts";

/** Largest RPC message accepted; the gateway enforces tighter HTTP body limits first. */
export const RPC_MAX_BYTES = 64 * 1024 * 1024;

/**
 * One service as hosted by a process: its RPC routes, a health probe, and optional
 * background work. The same module runs alone (split) or beside the others (all-in-one).
 */
export interface ServiceModule {
  /** Short name, e.g. "tenancy". */
  readonly name: string;
  /** Fully-qualified proto service name, e.g. "meter.tenancy.v1.TenancyService". */
  readonly serviceName: string;
  routes(router: ConnectRouter): void;
  /** True when the service can reach its database. */
  healthy(): Promise<boolean>;
  /** Starts background work (relays, job workers); called once the RPC server listens. */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

export interface RpcServer {
  readonly port: number;
  /** Base URL for clients, e.g. http://127.0.0.1:9090 */
  readonly url: string;
  close(): Promise<void>;
}

/** Carries the caller's request id into the handler's context and logs failures. */
function serverContextInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const requestId = req.header.get(REQUEST_ID_HEADER) || randomUUID();
    return runWithContext({ requestId }, async () => {
      const started = performance.now();
      try {
        const res = await next(req);
        logger.debug({ rpc: req.method.name, ms: Math.round(performance.now() - started) }, "rpc ok");
        return res;
      } catch (err) {
        const ce = ConnectError.from(err);
        const fields = { rpc: req.method.name, code: Code[ce.code], ms: Math.round(performance.now() - started) };
        if (ce.code === Code.Internal || ce.code === Code.Unknown) {
          logger.error({ ...fields, err }, "rpc failed");
        } else {
          logger.debug({ ...fields, message: ce.rawMessage }, "rpc refused");
        }
        throw ce;
      }
    });
  };
}

/** Health service name that reports the process alive regardless of its dependencies. */
export const LIVENESS = "liveness";

function healthRoutes(router: ConnectRouter, modules: readonly ServiceModule[]) {
  router.service(Health, {
    async check(req) {
      // "liveness" only says the process answers; a database outage must not restart pods.
      if (req.service === LIVENESS) return { status: ServingStatus.SERVING };
      const wanted = req.service
        ? modules.filter((m) => m.name === req.service || m.serviceName === req.service)
        : modules;
      if (req.service && wanted.length === 0) {
        return { status: ServingStatus.SERVICE_UNKNOWN };
      }
      const results = await Promise.all(wanted.map((m) => m.healthy()));
      return { status: results.every(Boolean) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING };
    },
  });
}

export interface RpcListener extends RpcServer {
  /** Starts answering with these modules; until then every call fails as unavailable. */
  serve(modules: readonly ServiceModule[]): void;
}

/**
 * Binds an HTTP/2 cleartext port for gRPC, gRPC-Web and Connect before the modules exist,
 * so that modules which call each other can be given the final address (port 0 works).
 */
export async function listenRpc(opts: { port: number; host?: string; logger: Logger }): Promise<RpcListener> {
  let handler: ((req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void) | undefined;
  const server = http2.createServer({}, (req, res) => {
    if (handler) return handler(req, res);
    res.writeHead(200, { "content-type": "application/grpc", "grpc-status": String(Code.Unavailable), "grpc-message": "starting" });
    res.end();
  });
  const sessions = new Set<http2.Http2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  const host = opts.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const clientHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  return {
    port,
    url: `http://${clientHost}:${port}`,
    serve(modules) {
      handler = connectNodeAdapter({
        routes(router) {
          for (const m of modules) m.routes(router);
          healthRoutes(router, modules);
        },
        interceptors: [serverContextInterceptor(opts.logger)],
        readMaxBytes: RPC_MAX_BYTES,
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Clients keep HTTP/2 sessions open; end them so close() does not wait forever.
        for (const s of sessions) s.close();
        setTimeout(() => {
          for (const s of sessions) s.destroy();
        }, 2_000).unref();
      }),
  };
}

/** Serves the modules over HTTP/2 cleartext on one port. */
export async function serveRpc(opts: {
  modules: readonly ServiceModule[];
  port: number;
  host?: string;
  logger: Logger;
}): Promise<RpcServer> {
  const listener = await listenRpc(opts);
  listener.serve(opts.modules);
  return listener;
}

/** Passes the current request id along on outgoing calls. */
const propagateRequestId: Interceptor = (next) => async (req) => {
  if (!req.header.has(REQUEST_ID_HEADER)) {
    const ctx = currentContext();
    if (ctx) req.header.set(REQUEST_ID_HEADER, ctx.requestId);
  }
  return next(req);
};

const transports = new Map<string, Transport>();

/** gRPC transport to a peer; one HTTP/2 session per base URL, shared by all its clients. */
export function grpcTransport(baseUrl: string): Transport {
  let t = transports.get(baseUrl);
  if (!t) {
    t = createGrpcTransport({
      baseUrl,
      interceptors: [propagateRequestId],
      readMaxBytes: RPC_MAX_BYTES,
      defaultTimeoutMs: 30_000,
    });
    transports.set(baseUrl, t);
  }
  return t;
}

/** A typed client for a peer service over gRPC. */
export function rpcClient<T extends DescService>(service: T, baseUrl: string): Client<T> {
  return createClient(service, grpcTransport(baseUrl));
}
