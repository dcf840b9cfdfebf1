import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import { close, eq, rolledUp, usage } from "../testing/facts.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";

const t = suite<Replicas>("GetBreakdown over gRPC");
withReplicas(t, "analytics_get_breakdown");

t("breakdown: per model, highest cost first, shares of cost summing to 100", async (ctx) => {
  const { a, p } = await rolledUp(ctx, (p) => ({
    usage: [
      usage(p, "2026-03-10T01:00:00Z", { model: "a", cost: 1, tokens: 10n }),
      usage(p, "2026-03-09T01:00:00Z", { model: "a", cost: 1, tokens: 10n }),
      usage(p, "2026-03-10T01:00:00Z", { model: "b", cost: 1, tokens: 500n }),
      usage(p, "2026-03-10T01:00:00Z", { model: undefined, cost: 0, tokens: 0n, source: "manual" }),
      usage(p, "2026-03-10T02:00:00Z", { model: "c", cost: 0, tokens: 7n }),
    ],
  }));
  const b = await a.client.getBreakdown({ productId: p, days: 7 });
  eq(
    b.models.map((m) => [m.model, m.cost, m.tokens, m.pct]),
    [
      ["a", 2, 20n, 66.67],
      ["b", 1, 500n, 33.33],
      ["c", 0, 7n, 0],
      ["unknown", 0, 0n, 0],
    ],
  );
  close(b.models.reduce((x, m) => x + m.pct, 0), 100, "pct sum");
  // Nothing cost anything in this window: shares of tokens instead.
  const q = randomUUID();
  await a.client.recordEvents({
    usage: [usage(q, "2026-03-10T01:00:00Z", { model: "x", cost: 0, tokens: 1n }), usage(q, "2026-03-10T01:00:00Z", { model: "y", cost: 0, tokens: 3n })],
  });
  await a.module.rollPending();
  eq((await a.client.getBreakdown({ productId: q })).models.map((m) => [m.model, m.pct]), [["y", 75], ["x", 25]]);
});

t.run();
