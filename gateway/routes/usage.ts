import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { BillingPeriod, CurrentUsage, GetSessionResponse, GetUsageResponse, PlanConfig, SessionTeam } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { DateTime, KeyedBy, Nullable, TeamParams, UserParams, clientRead, errors, parseDateTime } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";
import { DimensionOut, dimensionJson } from "../schemas/limits.ts";
import { GateEventOut, gateEventJson } from "../schemas/gate-events.ts";
import { SessionCreditsOut, sessionCreditsJson } from "../schemas/credits.ts";
import { LimitOut, sharedPlanFieldsJson, sharedPlanFieldsOut } from "../schemas/plans.ts";

const NumberMap = KeyedBy(Type.Number());
const IntegerMap = KeyedBy(Type.Integer());
const Rate = Type.Object({ input: Type.Number(), output: Type.Number() });

const PlanConfigOut = Type.Object({
    max_spend_per_period: Type.Optional(Type.Number({ description: "Omitted: unlimited" })),
    max_spend_per_session: Type.Optional(Type.Number({ description: "Omitted: unlimited" })),
    soft_gate_at: Type.Number(),
    hard_gate_at: Type.Number(),
    model_limits: KeyedBy(Type.Object({ max_tokens_per_period: Type.Integer() })),
    cost_rates: KeyedBy(Rate),
    session_timeout_minutes: Type.Number(),
    default_cost_rate: Type.Optional(Type.Object(Rate.properties, { description: "Omitted: models without a cost rate cost nothing" })),
    ...sharedPlanFieldsOut,
    limits: Type.Array(LimitOut, { description: "The plan's windows and rate limits; empty without" }),
    credits_low_at: Type.Optional(Type.Number({ description: "Dollars; omitted: credits.low never fires" })),
  });

const CurrentUsageOut = Type.Object({
  period_cost: Type.Number(),
  period_tokens_total: Type.Integer(),
  period_tokens_by_model: IntegerMap,
  period_cost_by_model: NumberMap,
});

const BillingPeriodOut = Type.Object({ start: DateTime, end: DateTime });

const SessionTeamOut = Type.Object(
  {
    team_id: Type.String({ description: "The external team id" }),
    service_team_id: Type.String({ format: "uuid" }),
    plan: Type.String(),
    plan_id: Type.String(),
    plan_config: PlanConfigOut,
    current_usage: { ...CurrentUsageOut, description: "The team's sums over its members in its billing period" },
    billing_period: { ...BillingPeriodOut, description: "The team's" },
    credits: Nullable({
      ...SessionCreditsOut,
      description:
        "The team's shared pool when the team plan has credits enabled (null otherwise): drawn after each member's own credits; " +
        "its balance extends team:total_spend (that dimension's max and credits)",
    }),
  },
  {
    description:
      "The team the user is a member of, when it has a plan in force; its dimensions are in limits with reasons prefixed team:. " +
      "The team plan's max_spend_per_session is not applied (sessions belong to users)",
  },
);

const SessionBody = Type.Object({
  user_id: Type.String(),
  service_user_id: Type.String({ format: "uuid" }),
  plan: Type.String({ description: 'Plan name; "none" for a user without a plan' }),
  plan_id: Nullable(Type.String({ description: "Id of the plan in force; null without one. GET /config/changes lists plans by this id" })),
  sdk_enabled: Type.Boolean({
    description: "True when a plan is in force (the user's own or its team's) and the client must enforce plan_config and limits; false: no plan, permissive defaults",
  }),
  plan_config: PlanConfigOut,
  current_usage: CurrentUsageOut,
  billing_period: BillingPeriodOut,
  limits: Type.Array(DimensionOut, { description: "Every dimension of the user with its usage now (as GET /users/{user_id}/limits), its team's last" }),
  credits: Nullable(SessionCreditsOut),
  team: Nullable(SessionTeamOut),
});

const UsageQuery = Type.Object({
  period: Type.String({
    default: "current_period",
    pattern: "^(current_period|current_month|[0-9]{4}-[0-9]{2})$",
    description: "current_period, current_month or YYYY-MM",
  }),
  breakdown: Type.Literal("model", { default: "model" }),
});

/** What a usage answer says of a period, for a user or a team. */
const usageFields = {
  period: Type.String(),
  total_cost: Type.Number(),
  total_tokens: Type.Integer(),
  tokens_by_model: IntegerMap,
  cost_by_model: NumberMap,
  tool_calls_count: Type.Integer(),
};

const UsageBody = Type.Object({ user_id: Type.String(), ...usageFields });

const TeamUsageBody = Type.Object({
  team_id: Type.String(),
  ...usageFields,
  total_cost: Type.Number({ description: "Dollars: the sum over the team's members" }),
});

const GateQuery = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal("soft_gate"), Type.Literal("hard_gate")])),
  gate_reason: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
  blocked_only: Type.Boolean({ default: false }),
  since: Type.Optional(Type.String({ format: "date-time", description: "Inclusive lower bound" })),
  until: Type.Optional(Type.String({ format: "date-time", description: "Exclusive upper bound" })),
  cursor: Type.Optional(Type.String({ maxLength: 2000, description: "next_cursor of the previous page" })),
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
});

const GatePage = Type.Object({
  user_id: Type.String(),
  events: Type.Array(GateEventOut),
  next_cursor: Nullable(Type.String()),
});

const wholeNumbers = (m: Record<string, number>) =>
  Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Math.round(v)]));

/** usageFields of a GetUsage or GetTeamUsage answer. */
function usageJson(u: Omit<GetUsageResponse, "userId" | "$typeName">) {
  return {
    period: u.period,
    total_cost: u.totalCost,
    total_tokens: Number(u.totalTokens),
    tokens_by_model: wholeNumbers(u.tokensByModel),
    cost_by_model: u.costByModel,
    tool_calls_count: Number(u.toolCallsCount),
  };
}

function planConfigJson(c: PlanConfig) {
  return {
    ...sharedPlanFieldsJson(c),
    // An omitted cap means unlimited (clients that read a number for every cap break on null).
    ...(c.maxSpendPerPeriod !== undefined && { max_spend_per_period: c.maxSpendPerPeriod }),
    ...(c.maxSpendPerSession !== undefined && { max_spend_per_session: c.maxSpendPerSession }),
    ...(c.defaultCostRate && { default_cost_rate: { input: c.defaultCostRate.input, output: c.defaultCostRate.output } }),
    ...(c.creditsLowAt !== undefined && { credits_low_at: c.creditsLowAt }),
  };
}

function currentUsageJson(u: CurrentUsage) {
  return {
    period_cost: u.periodCost,
    period_tokens_total: Number(u.periodTokensTotal),
    period_tokens_by_model: wholeNumbers(u.periodTokensByModel),
    period_cost_by_model: u.periodCostByModel,
  };
}

const billingPeriodJson = (p: BillingPeriod) => ({ start: timestampDate(p.start!).toISOString(), end: timestampDate(p.end!).toISOString() });

/** What a session answers alike of its user and of the user's team: the plan in force, the period's usage and the credits. */
function planStateJson(x: GetSessionResponse | SessionTeam) {
  return {
    plan: x.plan,
    plan_config: planConfigJson(x.planConfig!),
    current_usage: currentUsageJson(x.currentUsage!),
    billing_period: billingPeriodJson(x.billingPeriod!),
    credits: x.credits ? sessionCreditsJson(x.credits) : null,
  };
}

function sessionTeamJson(t: SessionTeam) {
  return { team_id: t.teamId, service_team_id: t.serviceTeamId, plan_id: t.planId, ...planStateJson(t) };
}

export const usageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    "/users/:user_id/session",
    clientRead(UserParams, SessionBody, "getSession", "Session bootstrap read by the client library on start and refresh"),
    async (request) => {
      const s = await app.services.ingestion.getSession(
        { productId: request.productId, userId: request.params.user_id },
        rpcOptions(request),
      );
      return {
        user_id: s.userId,
        service_user_id: s.serviceUserId,
        plan_id: s.planId ?? null,
        sdk_enabled: s.sdkEnabled,
        ...planStateJson(s),
        limits: s.limits.map(dimensionJson),
        team: s.team ? sessionTeamJson(s.team) : null,
      };
    },
  );

  app.get(
    "/users/:user_id/usage",
    clientRead(UserParams, UsageBody, "getUsage", "Usage of a user in a period, broken down by model", { querystring: UsageQuery }),
    async (request) => {
      const u = await app.services.ingestion.getUsage(
        { productId: request.productId, userId: request.params.user_id, period: request.query.period },
        rpcOptions(request),
      );
      return { user_id: u.userId, ...usageJson(u) };
    },
  );

  app.get(
    "/teams/:team_id/usage",
    clientRead(
      TeamParams,
      TeamUsageBody,
      "getTeamUsage",
      "Usage of a team in a period (the sums over what its members spent while in it), broken down by model",
      {
        description:
          "current_period is the team's billing period in force now. A member's usage counts for the team it was a member of at the " +
          "usage's timestamp: a member moved to another team leaves its past usage here.",
        querystring: UsageQuery,
      },
    ),
    async (request) => {
      const u = await app.services.ingestion.getTeamUsage(
        { productId: request.productId, teamId: request.params.team_id, period: request.query.period },
        rpcOptions(request),
      );
      return { team_id: u.teamId, ...usageJson(u) };
    },
  );

  app.get(
    "/users/:user_id/gate-events",
    {
      schema: {
        operationId: "listGateEvents",
        summary: "Gate events of a user, newest first, cursor-paginated",
        tags: ["usage"],
        params: UserParams,
        querystring: GateQuery,
        response: { 200: GatePage, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const q = request.query;
      const res = await app.services.ingestion.listGateEvents(
        {
          productId: request.productId,
          userId: request.params.user_id,
          status: q.status,
          gateReason: q.gate_reason,
          blockedOnly: q.blocked_only,
          since: q.since ? timestampFromDate(parseDateTime(q.since)) : undefined,
          until: q.until ? timestampFromDate(parseDateTime(q.until)) : undefined,
          cursor: q.cursor,
          limit: q.limit,
        },
        rpcOptions(request),
      );
      return { user_id: res.userId, events: res.events.map(gateEventJson), next_cursor: res.nextCursor ?? null };
    },
  );
};
