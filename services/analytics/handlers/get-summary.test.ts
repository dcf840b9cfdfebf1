import { suite } from "uvu";
import { timestampDate } from "@meter/lib/time";
import { eq, instance, rolledUp, usage } from "../testing/facts.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";

const t = suite<Replicas>("GetSummary over gRPC");
withReplicas(t, "analytics_get_summary");

t("windows: whole UTC days ending tomorrow at 00:00, previous period just before", async (ctx) => {
  const { a, p } = await rolledUp(ctx, (p) => ({
    usage: [
      usage(p, "2026-03-10T23:59:58.999Z", { cost: 1, tokens: 1n, userId: "today" }),
      usage(p, "2026-03-09T00:00:00.000Z", { cost: 2, tokens: 2n, userId: "yesterday" }),
      usage(p, "2026-03-08T23:59:59.999Z", { cost: 4, tokens: 4n, userId: "prev-late" }),
      usage(p, "2026-03-07T00:00:00.000Z", { cost: 8, tokens: 8n, userId: "prev-early" }),
      usage(p, "2026-03-06T23:59:59.999Z", { cost: 16, tokens: 16n, userId: "too-old" }),
    ],
  }));
  const s = await a.client.getSummary({ productId: p, days: 2 });
  eq(timestampDate(s.periodStart!).toISOString(), "2026-03-09T00:00:00.000Z");
  eq(timestampDate(s.periodEnd!).toISOString(), "2026-03-11T00:00:00.000Z");
  eq([s.current!.totalCost, s.current!.totalTokens, s.current!.totalEvents, s.current!.activeUsers], [3, 3n, 2n, 2n]);
  const prev = s.previousPeriod!;
  eq([prev.totalCost, prev.totalTokens, prev.totalEvents, prev.activeUsers], [12, 12n, 2n, 2n]);

  // One second later it is a new day: the window moves by one day.
  const b = await instance(ctx, { now: () => new Date("2026-03-11T00:00:00.000Z") });
  const s2 = await b.client.getSummary({ productId: p, days: 2 });
  eq(timestampDate(s2.periodStart!).toISOString(), "2026-03-10T00:00:00.000Z");
  eq(timestampDate(s2.periodEnd!).toISOString(), "2026-03-12T00:00:00.000Z");
  eq(s2.current!.totalCost, 1);
  eq(s2.previousPeriod!.totalCost, 6);

  const one = await a.client.getSummary({ productId: p, days: 1 });
  eq(one.current!.totalCost, 1);
  eq(one.previousPeriod!.totalCost, 2);
  const dflt = await a.client.getSummary({ productId: p });
  eq(timestampDate(dflt.periodStart!).toISOString(), "2026-02-09T00:00:00.000Z");
  eq(dflt.current!.totalCost, 31);
});

t("the source filter restricts usage figures to manual or auto events", async (ctx) => {
  const { a, p } = await rolledUp(ctx, (p) => ({
    usage: [
      usage(p, "2026-03-10T01:00:00Z", { userId: "m1", source: "manual", cost: 5, tokens: 0n, model: undefined }),
      usage(p, "2026-03-10T01:00:00Z", { userId: "a1", source: "auto", cost: 1, tokens: 10n, model: "m" }),
      usage(p, "2026-03-03T01:00:00Z", { userId: "a1", source: "manual", cost: 2, tokens: 0n, model: "m" }),
    ],
  }));
  const manual = { source: "manual" };
  const s = await a.client.getSummary({ productId: p, days: 30, filter: manual });
  eq([s.current!.totalCost, s.current!.totalEvents, s.current!.activeUsers], [7, 2n, 2n]);
  const auto = await a.client.getSummary({ productId: p, days: 30, filter: { source: "auto" } });
  eq([auto.current!.totalCost, auto.current!.totalEvents, auto.current!.activeUsers], [1, 1n, 1n]);
  const ts = await a.client.getTimeseries({ productId: p, days: 1, filter: manual });
  eq(ts.data.map((d) => [d.date, d.cost, d.events]), [["2026-03-10", 5, 1n]]);
  const b = await a.client.getBreakdown({ productId: p, days: 30, filter: manual });
  eq(b.models.map((m) => [m.model, m.cost, m.pct]), [["unknown", 5, 71.43], ["m", 2, 28.57]]);
  const top = await a.client.getTopUsers({ productId: p, days: 30, filter: { source: "auto" } });
  eq(top.users.map((u) => [u.userId, u.cost]), [["a1", 1]]);
});

t.run();
