import { suite } from "uvu";
import { toTimestamp } from "@meter/lib/time";
import { eq, gate, rolledUp, usage } from "../testing/facts.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";

const t = suite<Replicas>("GetWindowReport over gRPC");
withReplicas(t, "analytics_get_window_report");

t("window report: explicit window widened to whole UTC days, gates and top users", async (ctx) => {
  const { a, p } = await rolledUp(ctx, (p) => ({
    usage: [
      usage(p, "2026-03-02T00:00:00Z", { userId: "x", cost: 1, tokens: 10n }),
      usage(p, "2026-03-08T23:59:59Z", { userId: "y", cost: 2, tokens: 20n }),
      usage(p, "2026-03-08T10:00:00Z", { userId: "y", cost: 2, tokens: 20n }),
      usage(p, "2026-03-09T00:00:00Z", { userId: "z", cost: 100 }),
      usage(p, "2026-03-01T23:59:59Z", { userId: "z", cost: 100 }),
    ],
    gates: [gate(p, "2026-03-05T00:00:00Z", "soft_gate"), gate(p, "2026-03-09T00:00:00Z", "hard_gate")],
  }));
  const r = await a.client.getWindowReport({
    productId: p,
    start: toTimestamp(new Date("2026-03-02T00:00:00Z")),
    end: toTimestamp(new Date("2026-03-09T00:00:00Z")),
    topUsersLimit: 5,
  });
  eq([r.totals!.totalCost, r.totals!.totalTokens, r.totals!.totalEvents, r.totals!.activeUsers], [5, 50n, 3n, 2n]);
  eq([r.softGates, r.hardGates], [1n, 0n]);
  eq(r.topUsers.map((u) => [u.userId, u.cost, u.tokens]), [["y", 4, 40n], ["x", 1, 10n]]);
});

t.run();
