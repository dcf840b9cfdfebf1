import { suite } from "uvu";
import { eq, gate, rolledUp, usage } from "../testing/facts.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";

const t = suite<Replicas>("GetTimeseries and GetGateTimeseries over gRPC");
withReplicas(t, "analytics_get_timeseries");

t("timeseries are dense, oldest first; gate timeseries count soft and hard gates", async (ctx) => {
  const { a, p } = await rolledUp(ctx, (p) => ({
    usage: [usage(p, "2026-03-08T12:00:00Z", { cost: 0.5, tokens: 50n }), usage(p, "2026-03-08T13:00:00Z", { cost: 0.25, tokens: 25n })],
    gates: [
      gate(p, "2026-03-10T01:00:00Z", "soft_gate"),
      gate(p, "2026-03-10T02:00:00Z", "soft_gate"),
      gate(p, "2026-03-10T03:00:00Z", "hard_gate"),
      gate(p, "2026-03-07T03:00:00Z", "hard_gate"),
    ],
  }));
  const ts = await a.client.getTimeseries({ productId: p, days: 4 });
  eq(
    ts.data.map((d) => [d.date, d.cost, d.tokens, d.events]),
    [
      ["2026-03-07", 0, 0n, 0n],
      ["2026-03-08", 0.75, 75n, 2n],
      ["2026-03-09", 0, 0n, 0n],
      ["2026-03-10", 0, 0n, 0n],
    ],
  );
  const gs = await a.client.getGateTimeseries({ productId: p, days: 3 });
  eq(
    gs.data.map((d) => [d.date, d.softGates, d.hardGates]),
    [
      ["2026-03-08", 0n, 0n],
      ["2026-03-09", 0n, 0n],
      ["2026-03-10", 2n, 1n],
    ],
  );
  eq((await a.client.getTimeseries({ productId: p, days: 365 })).data.length, 365);
});

t.run();
