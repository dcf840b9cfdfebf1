import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { create } from "@bufbuild/protobuf";
import { AuthenticateRequestSchema, TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { capturingLogger } from "../../test/support/log-lines.ts";
import { eventually } from "../../test/support/eventually.ts";
import { rpcFailure } from "../../test/support/rpc.ts";
import { currentContext, runWithContext } from "./context.ts";
import { rpcRequests } from "./metrics.ts";
import { listenRpc, rpcClient, type RpcListener, type ServiceModule } from "./rpc.ts";

// A call to modules served in this process (all-in-one with RPC_IN_PROCESS) must behave as the
// same call over gRPC: same context, deadline, errors, metrics and logs. Every case runs both ways.

interface Seen {
  requestId?: string;
  timeoutMs?: number;
  aborted?: boolean;
  request?: unknown;
  answer?: unknown;
}

/** A stand-in service whose one RPC reports what its handler saw. */
function probeModule(seen: Seen[]): ServiceModule {
  return {
    name: "probe",
    serviceName: TenancyService.typeName,
    routes(router) {
      router.service(TenancyService, {
        async authenticate(req, ctx) {
          const s: Seen = { requestId: currentContext()?.requestId, timeoutMs: ctx.timeoutMs(), request: req };
          seen.push(s);
          if (req.apiKey === "missing") throw new ConnectError("no such key", Code.NotFound);
          if (req.apiKey === "stall") {
            await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
            s.aborted = true;
          }
          const answer = { productId: `product of ${req.apiKey}` };
          s.answer = answer;
          return answer;
        },
      });
    },
    healthy: async () => true,
  };
}

async function served(way: "in-process" | "network") {
  const { logger, lines } = capturingLogger("debug");
  const seen: Seen[] = [];
  const listener: RpcListener = await listenRpc({ port: 0, logger, inProcess: way === "in-process" });
  await listener.serve([probeModule(seen)]);
  return { listener, lines, seen, client: rpcClient(TenancyService, listener.url) };
}

const answered = async (code: string) =>
  (await rpcRequests.get()).values.find(
    (v) => v.labels.service === TenancyService.typeName && v.labels.method === "Authenticate" && v.labels.code === code,
  )?.value ?? 0;

for (const way of ["in-process", "network"] as const) {
  test(`${way}: the caller's request id and deadline reach the handler; metrics and logs as over gRPC`, async () => {
    const { listener, lines, seen, client } = await served(way);
    try {
      const before = await answered("ok");
      const res = await runWithContext({ requestId: "caller-7" }, async () => {
        const r = await client.authenticate({ apiKey: "k1" }, { timeoutMs: 5_000 });
        assert.is(currentContext()?.requestId, "caller-7", "the caller's context is its own again");
        return r;
      });
      assert.is(res.productId, "product of k1");
      assert.is(seen[0]!.requestId, "caller-7");
      assert.ok(seen[0]!.timeoutMs! > 0 && seen[0]!.timeoutMs! <= 5_000, `deadline seen: ${seen[0]!.timeoutMs}`);
      assert.is(await answered("ok"), before + 1);
      const line = lines.find((l) => l.msg === "rpc ok");
      assert.is(line?.via, way);
      assert.is(line?.requestId, "caller-7");
    } finally {
      await listener.close();
    }
  });

  test(`${way}: a refusal arrives with its code and message`, async () => {
    const { listener, lines, client } = await served(way);
    try {
      const before = await answered("not_found");
      const err = await rpcFailure(client.authenticate({ apiKey: "missing" }));
      assert.is(err?.code, Code.NotFound);
      assert.is(err?.rawMessage, "no such key");
      assert.is(await answered("not_found"), before + 1);
      assert.is(lines.find((l) => l.msg === "rpc refused")?.via, way);
    } finally {
      await listener.close();
    }
  });

  test(`${way}: the handler and the caller share no object; a method not implemented is Unimplemented`, async () => {
    const { listener, seen, client } = await served(way);
    try {
      const sent = create(AuthenticateRequestSchema, { apiKey: "k4" });
      const res = await client.authenticate(sent);
      assert.is(res.productId, "product of k4");
      assert.is.not(seen[0]!.request, sent, "the handler got a decoded copy of the request");
      assert.is.not(res, seen[0]!.answer, "the caller got a decoded copy of the answer");
      assert.is((await rpcFailure(client.listProducts({ productId: "p1" })))?.code, Code.Unimplemented);
    } finally {
      await listener.close();
    }
  });

  test(`${way}: a call the caller cancels fails as Canceled and the handler is told`, async () => {
    const { listener, seen, client } = await served(way);
    try {
      const caller = new AbortController();
      const call = client.authenticate({ apiKey: "stall" }, { signal: caller.signal });
      await eventually(() => seen.length === 1, 10_000, "the call to reach the handler");
      caller.abort();
      assert.is((await rpcFailure(call))?.code, Code.Canceled);
      await eventually(() => seen[0]?.aborted, 10_000, "the handler's signal to abort");
    } finally {
      await listener.close();
    }
  });

  test(`${way}: a call past its deadline fails as DeadlineExceeded and the handler is told`, async () => {
    const { listener, seen, client } = await served(way);
    try {
      const err = await rpcFailure(client.authenticate({ apiKey: "stall" }, { timeoutMs: 100 }));
      assert.is(err?.code, Code.DeadlineExceeded);
      await eventually(() => seen[0]?.aborted, 10_000, "the handler's signal to abort");
    } finally {
      await listener.close();
    }
  });
}

test("in-process: the port still serves gRPC to other processes, and after close callers here meet the closed port", async () => {
  const { listener, lines, client } = await served("in-process");
  const remote = createClient(TenancyService, createGrpcTransport({ baseUrl: listener.url }));
  assert.is((await remote.authenticate({ apiKey: "k2" })).productId, "product of k2");
  assert.is(lines.find((l) => l.msg === "rpc ok")?.via, "network");
  await listener.close();
  const err = await rpcFailure(client.authenticate({ apiKey: "k3" }, { timeoutMs: 5_000 }));
  assert.is(err?.code, Code.Unavailable);
});

test.run();
