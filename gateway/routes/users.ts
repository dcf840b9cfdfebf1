import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type, type Static } from "typebox";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Team, User } from "@meter/proto/meter/plans/v1/plans_pb";
import { Body, DateTime, ExternalUserId, Nullable, errors, parseDateTime } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";

export const UserBody = Type.Object({
  id: Type.String({ format: "uuid" }),
  external_user_id: Type.String(),
  name: Nullable(Type.String()),
  plan_name: Nullable(Type.String()),
  billing_subscription_id: Nullable(Type.String()),
  created_at: DateTime,
  updated_at: DateTime,
  team_id: Nullable(Type.String({ description: "The external_team_id of the team the user belongs to now; null: none" })),
});

const ListUsersQuery = Type.Object({
  prefix: Type.Optional(
    Type.String({ maxLength: 255, description: "Only users whose external_user_id starts with it (exact characters, case-sensitive; no pattern syntax)" }),
  ),
  plan: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "Only users whose current subscription is on the plan of this name" })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: "next_cursor of the previous page (same prefix and plan)" })),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
});

const UserListRow = Type.Object({
  ...UserBody.properties,
  period_spend_usd: Type.Number({ description: "Dollars spent in the billing period in force now (what GET /users/{user_id}/usage reports as total_cost for current_period)" }),
  period_tokens: Type.Integer({ description: "Tokens used in that period" }),
  period_start: { ...DateTime, description: "Start of the billing period in force now" },
  period_end: { ...DateTime, description: "Exclusive end of that period" },
});

const UserPage = Type.Object({
  users: Type.Array(UserListRow),
  next_cursor: Nullable(Type.String({ description: "Pass as cursor for the next page; null on the last page" })),
});

const CreateUserBody = Body({
  external_user_id: ExternalUserId("The product's own id; opaque"),
  name: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
});

/** A plan and billing period, for a user's subscription and a team's alike. */
export const SubscriptionBody = Body({
  plan_id: Type.String({ format: "uuid", description: "Plan id; plan names are not accepted" }),
  billing_subscription_id: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  period_start: Type.Optional(Nullable(DateTime)),
  period_end: Type.Optional(Nullable({ ...DateTime, description: "Exclusive end of the billing period" })),
});

// No length bound here: a longer id names no user (404), as any unknown one.
const UserIdParams = Type.Object({
  user_id: ExternalUserId("external_user_id (1-255 characters), URL-encoded", null),
});

/** What a user and a team answer alike: their current subscription and their record's times. */
export function subscriberJson(s: User | Team) {
  return {
    plan_name: s.planName ?? null,
    billing_subscription_id: s.billingSubscriptionId ?? null,
    created_at: timestampDate(s.createdAt!).toISOString(),
    updated_at: timestampDate(s.updatedAt!).toISOString(),
  };
}

export function userJson(u: User) {
  return {
    id: u.id,
    external_user_id: u.externalUserId,
    name: u.name ?? null,
    ...subscriberJson(u),
    team_id: u.teamId ?? null,
  };
}

const TeamMembershipBody = Body({
  team_id: Nullable(ExternalUserId("external_team_id of the team to join (one team at a time: joining leaves the team before); null leaves the team")),
});

const date = (s: string | null | undefined) => (s ? timestampFromDate(parseDateTime(s)) : undefined);

/** A SubscriptionBody as the plans service takes it, for a user's subscription and a team's alike. */
export function subscriptionFields(b: Static<typeof SubscriptionBody>) {
  return {
    planId: b.plan_id,
    billingSubscriptionId: b.billing_subscription_id ?? undefined,
    periodStart: date(b.period_start),
    periodEnd: date(b.period_end),
  };
}

export const userRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/users",
    {
      schema: {
        operationId: "createUser",
        summary: "Register an end user",
        tags: ["users"],
        body: CreateUserBody,
        response: { 201: UserBody, ...errors(400, 401, 409, 422) },
      },
    },
    async (request, reply) => {
      const res = await app.services.plans.createUser(
        {
          productId: request.productId,
          externalUserId: request.body.external_user_id,
          name: request.body.name ?? undefined,
        },
        rpcOptions(request),
      );
      return reply.status(201).send(userJson(res.user!));
    },
  );

  app.get(
    "/users",
    {
      schema: {
        operationId: "listUsers",
        summary: "The product's users in external_user_id order, with the current period's spend, cursor-paginated",
        tags: ["users"],
        querystring: ListUsersQuery,
        response: { 200: UserPage, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      const q = request.query;
      const page = await app.services.plans.listUsers(
        { productId: request.productId, prefix: q.prefix ?? "", planName: q.plan, cursor: q.cursor, limit: q.limit },
        rpcOptions(request),
      );
      // One call for the whole page's spend (ingestion owns the counters), never one per user.
      const spends =
        page.users.length === 0
          ? new Map<string, never>()
          : new Map(
              (
                await app.services.ingestion.getPeriodSpends(
                  { productId: request.productId, userIds: page.users.map((u) => u.externalUserId) },
                  rpcOptions(request),
                )
              ).spends.map((s) => [s.userId, s]),
            );
      return {
        users: page.users.map((u) => {
          const s = spends.get(u.externalUserId);
          // Users are never deleted, and ingestion resolves them through the same plans service.
          if (!s) throw new Error(`ingestion reported no period for listed user ${JSON.stringify(u.externalUserId)}`);
          return {
            ...userJson(u),
            period_spend_usd: s.cost,
            period_tokens: Number(s.totalTokens),
            period_start: timestampDate(s.periodStart!).toISOString(),
            period_end: timestampDate(s.periodEnd!).toISOString(),
          };
        }),
        next_cursor: page.nextCursor ?? null,
      };
    },
  );

  app.get(
    "/users/:user_id",
    {
      schema: {
        operationId: "getUser",
        summary: "One end user, with the plan of its current subscription",
        tags: ["users"],
        params: UserIdParams,
        response: { 200: UserBody, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const res = await app.services.plans.getUser(
        { productId: request.productId, externalUserId: request.params.user_id },
        rpcOptions(request),
      );
      return userJson(res.user!);
    },
  );

  app.post(
    "/users/:user_id/subscription",
    {
      schema: {
        operationId: "setSubscription",
        summary: "Subscribe a user to a plan for a billing period",
        tags: ["users"],
        params: UserIdParams,
        body: SubscriptionBody,
        response: { 200: UserBody, ...errors(400, 401, 404, 422) },
      },
    },
    async (request) => {
      const res = await app.services.plans.setSubscription(
        { productId: request.productId, externalUserId: request.params.user_id, ...subscriptionFields(request.body) },
        rpcOptions(request),
      );
      return userJson(res.user!);
    },
  );

  app.put(
    "/users/:user_id/team",
    {
      schema: {
        operationId: "setUserTeam",
        summary: "Put a user in a team, or in none",
        description:
          "A user belongs to at most one team. From now on the user's usage counts for the team too; usage before stays with the team it was counted for.",
        tags: ["users", "teams"],
        params: UserIdParams,
        body: TeamMembershipBody,
        response: { 200: UserBody, ...errors(400, 401, 404, 422) },
      },
    },
    async (request) => {
      const res = await app.services.plans.setUserTeam(
        { productId: request.productId, externalUserId: request.params.user_id, externalTeamId: request.body.team_id ?? undefined },
        rpcOptions(request),
      );
      return userJson(res.user!);
    },
  );
};

