import net from "node:net";
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
import { listenRpc, RPC_SESSION_TURN_MS, rpcClient, type RpcListener, type ServiceModule } from "./rpc.ts";

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
      assert.is.not(seen[0]!.request, sent, "the handler got a decoded copy of the message the caller built");
      assert.is.not(res, seen[0]!.answer, "the caller got a decoded copy of the answer");
      // Fields: the handler gets the message built from them for this call (in-process, not encoded again).
      const fields = { apiKey: "k5" };
      assert.is((await client.authenticate(fields)).productId, "product of k5");
      assert.is.not(seen[1]!.request, fields);
      assert.is((seen[1]!.request as { apiKey: string }).apiKey, "k5");
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

test("network: new calls turn to a new session after RPC_SESSION_TURN_MS, so a Service that balances connections spreads them", async () => {
  // Two replicas behind one address that, as a Kubernetes Service, picks a replica per connection.
  const replicas = await Promise.all([served("network"), served("network")]);
  let next = 0;
  const sockets = new Set<net.Socket>();
  const front = net.createServer((client) => {
    const target = new URL(replicas[next++ % 2]!.listener.url);
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => s.destroy());
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(front.address() as net.AddressInfo).port}`;
  const realNow = Date.now;
  try {
    const client = rpcClient(TenancyService, url);
    for (let i = 0; i < 3; i++) await client.authenticate({ apiKey: `first-${i}` });
    assert.equal(replicas.map((r) => r.seen.length), [3, 0], "one session: every call to the first replica");
    // Later than any turn: the next call opens a session of its own, which the front sends to the other replica.
    Date.now = () => realNow() + 2 * RPC_SESSION_TURN_MS;
    for (let i = 0; i < 3; i++) await client.authenticate({ apiKey: `second-${i}` });
    assert.equal(replicas.map((r) => r.seen.length), [3, 3]);
  } finally {
    Date.now = realNow;
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => front.close(() => resolve()));
    await Promise.all(replicas.map((r) => r.listener.close()));
  }
});

test.run();
