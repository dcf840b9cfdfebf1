import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Plan, PlanSettingsSchema } from "@meter/proto/meter/plans/v1/plans_pb";
import { limitToMessage } from "@meter/lib/plan-limits";
import { errors } from "../schemas/common.ts";
import { CreatePlansBody, PlanBody, PlanPatchBody, mapEntries, sharedPlanFieldsJson, type PlanInput } from "../schemas/plans.ts";
import { rpcOptions } from "../rpc-options.ts";

/** JSON plan fields to PlanSettings; null and absent both leave the field unset. */
export function planSettings(p: PlanInput): MessageInitShape<typeof PlanSettingsSchema> {
  return {
    name: p.name,
    maxSpendPerPeriod: p.max_spend_per_period ?? undefined,
    maxSpendPerSession: p.max_spend_per_session ?? undefined,
    sessionTimeoutMinutes: p.session_timeout_minutes,
    softGateAt: p.soft_gate_at,
    hardGateAt: p.hard_gate_at,
    modelLimits: mapEntries(p.model_limits, (l) => ({ maxTokensPerPeriod: BigInt(l.max_tokens_per_period) })),
    costRates: p.cost_rates ?? {},
    defaultCostRate: p.default_cost_rate ?? undefined,
    toolCosts: p.tool_costs ?? {},
    defaultToolCost: p.default_tool_cost,
    preCallEstimate: p.pre_call_estimate,
    preCallBufferTokens: p.pre_call_buffer_tokens === undefined ? undefined : BigInt(p.pre_call_buffer_tokens),
    limits: (p.limits ?? []).map(limitToMessage),
    timeZone: p.time_zone ?? undefined,
    creditsEnabled: p.credits_enabled,
    creditsLowAt: p.credits_low_at ?? undefined,
  };
}

export function planJson(p: Plan) {
  return {
    id: p.id,
    name: p.name,
    ...sharedPlanFieldsJson(p),
    max_spend_per_period: p.maxSpendPerPeriod ?? null,
    max_spend_per_session: p.maxSpendPerSession ?? null,
    default_cost_rate: p.defaultCostRate ? { input: p.defaultCostRate.input, output: p.defaultCostRate.output } : null,
    credits_low_at: p.creditsLowAt ?? null,
    created_at: timestampDate(p.createdAt!).toISOString(),
    updated_at: timestampDate(p.updatedAt!).toISOString(),
  };
}

/** Largest plan request body: one plan with its three maps full (1,000 names of 255 characters) fits. */
export const PLAN_BODY_LIMIT = 1024 * 1024;

export const planRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/config/plans",
    {
      bodyLimit: PLAN_BODY_LIMIT,
      schema: {
        operationId: "createPlans",
        summary: "Create plans; names that already exist are skipped and listed in duplicates",
        description: "At most 100 plans per request and 50 per product (422 beyond); a body of at most 1 MiB (413 beyond).",
        tags: ["plans"],
        body: CreatePlansBody,
        response: {
          201: Type.Object({ plans: Type.Array(PlanBody), duplicates: Type.Array(Type.String()) }),
          ...errors(400, 401, 409, 413, 422),
        },
      },
    },
    async (request, reply) => {
      const res = await app.services.plans.createPlans(
        {
          productId: request.productId,
          softGateAt: request.body.soft_gate_at,
          hardGateAt: request.body.hard_gate_at,
          plans: request.body.plans.map(planSettings),
        },
        rpcOptions(request),
      );
      return reply.status(201).send({ plans: res.plans.map(planJson), duplicates: res.duplicates });
    },
  );

  app.get(
    "/config/plans",
    {
      config: { ingest: true },
      schema: {
        operationId: "listPlans",
        summary: "List the product's plans with defaults filled in",
        tags: ["plans"],
        response: { 200: Type.Object({ plans: Type.Array(PlanBody) }), ...errors(401) },
      },
    },
    async (request) => {
      const res = await app.services.plans.listPlans({ productId: request.productId }, rpcOptions(request));
      return { plans: res.plans.map(planJson) };
    },
  );

  app.get(
    "/config/changes",
    {
      config: { ingest: true },
      schema: {
        operationId: "listConfigChanges",
        summary: "The product's change marker, and the plans and users changed after a marker",
        description:
          "The marker grows by one with every plan update (PATCH /config/plans/{plan_id}) and every subscription change " +
          "(POST /users/{user_id}/subscription). A client holding cached sessions polls this with the marker it last saw " +
          "and reloads only the sessions of the users listed or on the plans listed; `all: true` means reload every cached session " +
          "(the client is too far behind, or the marker is not one this service gave). Without `since`, only the marker is answered.",
        tags: ["plans"],
        querystring: Type.Object({
          since: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "The marker the caller last saw" })),
        }),
        response: {
          200: Type.Object({
            marker: Type.Integer({ description: "0 before the product's first change" }),
            all: Type.Boolean(),
            plan_ids: Type.Array(Type.String(), { description: "Plans updated after since" }),
            user_ids: Type.Array(Type.String(), { description: "external_user_ids whose subscription or team was set after since" }),
            team_ids: Type.Array(Type.String(), { description: "external_team_ids whose subscription was set after since: their members' sessions change" }),
          }),
          ...errors(400, 401),
        },
      },
    },
    async (request) => {
      const since = request.query.since;
      const res = await app.services.plans.listChanges(
        { productId: request.productId, since: since === undefined ? undefined : BigInt(since) },
        rpcOptions(request),
      );
      return { marker: Number(res.marker), all: res.all, plan_ids: res.planIds, user_ids: res.externalUserIds, team_ids: res.externalTeamIds };
    },
  );

  app.patch(
    "/config/plans/:plan_id",
    {
      bodyLimit: PLAN_BODY_LIMIT,
      schema: {
        operationId: "updatePlan",
        summary: "Change the fields sent and return the full plan",
        tags: ["plans"],
        params: Type.Object({ plan_id: Type.String({ description: "Plan id (UUID); anything else is not found" }) }),
        body: PlanPatchBody,
        response: { 200: PlanBody, ...errors(400, 401, 404, 409, 413, 422) },
      },
    },
    async (request) => {
      const res = await app.services.plans.updatePlan(
        {
          productId: request.productId,
          planId: request.params.plan_id,
          plan: planSettings(request.body),
          // JSON names are the PlanSettings field names; a field sent as null is cleared.
          updateMask: { paths: Object.keys(request.body) },
        },
        rpcOptions(request),
      );
      return planJson(res.plan!);
    },
  );
};
