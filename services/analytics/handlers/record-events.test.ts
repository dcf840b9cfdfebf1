import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import { Code } from "@connectrpc/connect";
import { rpcCode } from "../../../test/support/rpc.ts";
import { close, eq, gate, instance, NOW, rng, usage } from "../testing/facts.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";

const t = suite<Replicas>("RecordEvents over gRPC");
withReplicas(t, "analytics_record_events");

t("counts every fact once however often it is replayed", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  const rand = rng(7);
  const facts = Array.from({ length: 60 }, (_, i) =>
    usage(p, new Date(NOW.getTime() - Math.floor(rand() * 5 * 86_400_000)).toISOString(), {
      userId: `u${i % 7}`,
      tokens: BigInt(1 + Math.floor(rand() * 1000)),
      cost: Math.round(rand() * 10_000) / 1000,
    }),
  );
  const first = await a.client.recordEvents({ usage: facts.slice(0, 40) });
  eq([first.recorded, first.duplicates], [40, 0]);
  // The same call again stores nothing; a call mixing old and new facts is a new segment
  // (stored), and its old facts still count once (the figures below).
  const replay = await a.client.recordEvents({ usage: facts.slice(0, 40) });
  eq([replay.recorded, replay.duplicates], [0, 40]);
  const mixed = await a.client.recordEvents({ usage: facts.slice(20) });
  eq(mixed.recorded + mixed.duplicates, 40);
  await Promise.all([1, 2, 3].map(() => a.client.recordEvents({ usage: facts })));
  await a.module.rollPending();
  await a.client.recordEvents({ usage: facts.slice(0, 10) });
  await a.module.rollPending();

  const s = await a.client.getSummary({ productId: p, days: 7 });
  close(s.current!.totalCost, facts.reduce((x, f) => x + f.cost!, 0), "cost");
  eq(s.current!.totalTokens, facts.reduce((x, f) => x + (f.tokens as bigint), 0n));
  eq(s.current!.totalEvents, 60n);
  eq(s.current!.activeUsers, 7n);
});

t("refuses bad parameters and bad facts, storing nothing of a refused batch", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  eq(await rpcCode(a.client.getSummary({ productId: p, days: 366 })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getSummary({ productId: p, days: -1 })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getSummary({ productId: "" })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getTimeseries({ productId: p, filter: { source: "batch" } })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getTopUsers({ productId: p, limit: 101 })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getWindowReport({ productId: p })), Code.InvalidArgument);
  const ok = usage(p, "2026-03-10T01:00:00Z");
  eq(await rpcCode(a.client.recordEvents({ usage: [ok, usage(p, "2026-03-10T01:00:00Z", { source: "other" })] })), Code.InvalidArgument);
  eq(await rpcCode(a.client.recordEvents({ usage: [{ ...ok, timestamp: undefined }] })), Code.InvalidArgument);
  eq(await rpcCode(a.client.recordEvents({ gates: [{ ...gate(p, "2026-03-10T01:00:00Z", "soft_gate"), status: "ok" }] })), Code.InvalidArgument);
  await a.module.rollPending();
  eq((await a.client.getSummary({ productId: p })).current!.totalEvents, 0n);
});

t.run();
