import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Totals } from "@meter/proto/meter/analytics/v1/analytics_pb";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { DateTime, ExternalUserId, errors } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";

const Days = Type.Integer({
  minimum: 1,
  maximum: 365,
  default: 30,
  description: "Lookback in UTC calendar days, today included: the window is [00:00 UTC of today - days + 1, 00:00 UTC of tomorrow)",
});
const Source = Type.Optional(
  Type.Union([Type.Literal("manual"), Type.Literal("auto")], {
    description: "Count only events of this source (manual events or instrumented calls); both when absent",
  }),
);

// No length bound here: a longer id names no team (404), as any unknown one.
const TeamId = Type.Optional(
  ExternalUserId(
    "Only usage (and gates) attributed to this team (external_team_id): each event counts for the team its user was a member of at the event's time, so a member moved later leaves its past with the old team; events counted before teams were recorded belong to no team. 404 for an unknown team",
    null,
  ),
);

const DaysQuery = Type.Object({ days: Days, team_id: TeamId });
// Subscriptions are counted as they are now: `days` is taken, as on every analytics route, and changes nothing.
const SubscribersQuery = Type.Object({
  days: Days,
  team_id: Type.Optional(
    ExternalUserId("Only this team's current members (external_team_id), each under its own current plan, not the team's. 404 for an unknown team", null),
  ),
});
const FilteredQuery = Type.Object({ days: Days, source: Source, team_id: TeamId });
const TopUsersQuery = Type.Object({
  days: Days,
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 10, description: "How many users (1-100)" }),
  source: Source,
  team_id: TeamId,
});
const TopTeamsQuery = Type.Object({
  days: Days,
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 10, description: "How many teams (1-100)" }),
  source: Source,
  team_id: Type.Optional(ExternalUserId("Only this team (external_team_id); 404 for an unknown team", null)),
});

const TotalsBody = {
  total_cost: Type.Number(),
  total_tokens: Type.Integer(),
  total_events: Type.Integer(),
  active_users: Type.Integer({ description: "Distinct users with at least one usage event in the window" }),
};

const SummaryBody = Type.Object({
  ...TotalsBody,
  period_start: DateTime,
  period_end: { ...DateTime, description: "Exclusive end: 00:00 UTC of tomorrow" },
  previous_period: Type.Object(TotalsBody, { description: "The same number of days immediately before period_start" }),
});

const TimeseriesBody = Type.Object({
  data: Type.Array(
    Type.Object({ date: Type.String({ format: "date" }), cost: Type.Number(), tokens: Type.Integer(), events: Type.Integer() }),
    { description: "One row per UTC day of the window, oldest first, days without events as zeros" },
  ),
});

const GateTimeseriesBody = Type.Object({
  data: Type.Array(Type.Object({ date: Type.String({ format: "date" }), soft_gates: Type.Integer(), hard_gates: Type.Integer() })),
});

const BreakdownBody = Type.Object({
  models: Type.Array(
    Type.Object({
      model: Type.String({ description: '"unknown" for events sent without a model' }),
      cost: Type.Number(),
      tokens: Type.Integer(),
      pct: Type.Number({ description: "Percent (0-100) of the window's total cost; of tokens when the total cost is 0" }),
    }),
  ),
});

const TopUsersBody = Type.Object({
  users: Type.Array(Type.Object({ user_id: Type.String(), cost: Type.Number(), tokens: Type.Integer(), events: Type.Integer() })),
});

const TopTeamsBody = Type.Object({
  teams: Type.Array(
    Type.Object({
      team_id: Type.String({ description: "external_team_id" }),
      cost: Type.Number({ description: "Dollars spent by the team's members while in the team, in the window" }),
      tokens: Type.Integer(),
      events: Type.Integer({ description: "Usage events attributed to the team" }),
    }),
    { description: "Highest cost first, then team_id; teams without usage in the window are absent" },
  ),
});

const PlanSubscribersBody = Type.Object({
  plans: Type.Array(
    Type.Object({
      plan_name: Type.String(),
      subscriber_count: Type.Integer({ description: "Users whose current subscription is on the plan (with team_id: the team's members)" }),
      team_subscriber_count: Type.Integer({ description: "Teams whose current subscription is on the plan (with team_id: 1 for the team's own plan)" }),
    }),
  ),
});

function totalsJson(t: Totals | undefined) {
  return {
    total_cost: t?.totalCost ?? 0,
    total_tokens: Number(t?.totalTokens ?? 0),
    total_events: Number(t?.totalEvents ?? 0),
    active_users: Number(t?.activeUsers ?? 0),
  };
}

const filter = (source: string | undefined) => (source ? { source } : undefined);
const schema = <R>(operationId: string, summary: string, querystring: unknown, body: R) => ({
  operationId,
  summary,
  tags: ["analytics"],
  ...(querystring ? { querystring } : {}),
  // Every route with a query takes team_id: 404 for an unknown team.
  response: { 200: body, ...(querystring ? errors(400, 401, 404) : errors(400, 401)) },
});

/**
 * The team filter of a request, once the team is known to exist (the plans service answers
 * 404 for an unknown one, as for a user); undefined without a filter.
 */
async function teamFilter(app: FastifyInstance, request: FastifyRequest, teamId: string | undefined): Promise<string | undefined> {
  if (teamId === undefined) return undefined;
  await app.services.plans.getTeam({ productId: request.productId, externalTeamId: teamId }, rpcOptions(request));
  return teamId;
}

/**
 * The window of a read and what it counts there (its query's days, source and team_id), as the
 * windowed analytics RPCs take them; GetGateTimeseries has no source filter and leaves it out.
 */
async function windowOf(app: FastifyInstance, request: FastifyRequest) {
  const q = request.query as { days: number; source?: string; team_id?: string };
  return { productId: request.productId, days: q.days, filter: filter(q.source), teamId: await teamFilter(app, request, q.team_id) };
}

/** The analytics reads, each with a team filter; windows, ordering and shares are the analytics service's (see its README). */
export const analyticsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get("/analytics/summary", { schema: schema("getAnalyticsSummary", "Totals of the window and of the period before", FilteredQuery, SummaryBody) }, async (request) => {
    const res = await app.services.analytics.getSummary(await windowOf(app, request), rpcOptions(request));
    return {
      ...totalsJson(res.current),
      period_start: timestampDate(res.periodStart!).toISOString(),
      period_end: timestampDate(res.periodEnd!).toISOString(),
      previous_period: totalsJson(res.previousPeriod),
    };
  });

  app.get("/analytics/timeseries", { schema: schema("getAnalyticsTimeseries", "Cost, tokens and events per UTC day", FilteredQuery, TimeseriesBody) }, async (request) => {
    const res = await app.services.analytics.getTimeseries(await windowOf(app, request), rpcOptions(request));
    return { data: res.data.map((d) => ({ date: d.date, cost: d.cost, tokens: Number(d.tokens), events: Number(d.events) })) };
  });

  app.get("/analytics/gate-timeseries", { schema: schema("getAnalyticsGateTimeseries", "Soft and hard gate events per UTC day", DaysQuery, GateTimeseriesBody) }, async (request) => {
    const res = await app.services.analytics.getGateTimeseries(await windowOf(app, request), rpcOptions(request));
    return { data: res.data.map((d) => ({ date: d.date, soft_gates: Number(d.softGates), hard_gates: Number(d.hardGates) })) };
  });

  app.get("/analytics/breakdown", { schema: schema("getAnalyticsBreakdown", "Cost and tokens per model with shares", FilteredQuery, BreakdownBody) }, async (request) => {
    const res = await app.services.analytics.getBreakdown(await windowOf(app, request), rpcOptions(request));
    return { models: res.models.map((m) => ({ model: m.model, cost: m.cost, tokens: Number(m.tokens), pct: m.pct })) };
  });

  app.get("/analytics/top-users", { schema: schema("getAnalyticsTopUsers", "Users with the highest cost", TopUsersQuery, TopUsersBody) }, async (request) => {
    const { limit } = request.query as { limit: number };
    const res = await app.services.analytics.getTopUsers({ ...(await windowOf(app, request)), limit }, rpcOptions(request));
    return { users: res.users.map((u) => ({ user_id: u.userId, cost: u.cost, tokens: Number(u.tokens), events: Number(u.events) })) };
  });

  app.get("/analytics/top-teams", { schema: schema("getAnalyticsTopTeams", "Teams with the highest cost", TopTeamsQuery, TopTeamsBody) }, async (request) => {
    const { limit } = request.query as { limit: number };
    const res = await app.services.analytics.getTopTeams({ ...(await windowOf(app, request)), limit }, rpcOptions(request));
    return { teams: res.teams.map((t) => ({ team_id: t.teamId, cost: t.cost, tokens: Number(t.tokens), events: Number(t.events) })) };
  });

  app.get("/analytics/plan-subscribers", { schema: schema("getAnalyticsPlanSubscribers", "Subscribers per plan", SubscribersQuery, PlanSubscribersBody) }, async (request) => {
    const { team_id: teamId } = request.query as { team_id?: string };
    const res = await app.services.analytics.getPlanSubscribers({ productId: request.productId, teamId }, rpcOptions(request));
    return {
      plans: res.plans.map((p) => ({ plan_name: p.planName, subscriber_count: Number(p.subscriberCount), team_subscriber_count: Number(p.teamSubscriberCount) })),
    };
  });
};
