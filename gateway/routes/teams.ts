import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Team } from "@meter/proto/meter/plans/v1/plans_pb";
import { Body, DateTime, ExternalUserId, Nullable, errors } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";
import { SubscriptionBody, UserBody, subscriberJson, subscriptionFields, userJson } from "./users.ts";

/** A team (BUDGETS.md §4); `team_id` is the product's own id, as `user_id` is a user's. */
export const TeamBody = Type.Object({
  team_id: Type.String({ description: "external_team_id: the product's own id" }),
  service_team_id: Type.String({ format: "uuid" }),
  name: Type.String(),
  plan_name: Nullable(Type.String({ description: "The plan of the team's current subscription; null before one" })),
  billing_subscription_id: Nullable(Type.String()),
  member_count: Type.Integer({ description: "Current members" }),
  created_at: DateTime,
  updated_at: DateTime,
});

const CreateTeamBody = Body({
  external_team_id: ExternalUserId("The product's own id of the team (an organisation, a workspace); opaque, 1-255 characters"),
  name: Type.String({ minLength: 1, maxLength: 255 }),
});

// No length bound here: a longer id names no team (404), as any unknown one.
const TeamIdParams = Type.Object({
  team_id: ExternalUserId("external_team_id (1-255 characters), URL-encoded", null),
});

const ListTeamsQuery = Type.Object({
  prefix: Type.Optional(
    Type.String({ maxLength: 255, description: "Only teams whose external_team_id starts with it (exact characters, case-sensitive; no pattern syntax)" }),
  ),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: "next_cursor of the previous page (same prefix)" })),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
});

const MembersQuery = Type.Object({
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: "next_cursor of the previous page" })),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
});

const NextCursor = Nullable(Type.String({ description: "Pass as cursor for the next page; null on the last page" }));

export function teamJson(t: Team) {
  return {
    team_id: t.externalTeamId,
    service_team_id: t.id,
    name: t.name,
    ...subscriberJson(t),
    member_count: Number(t.memberCount),
  };
}

/** Teams and their members (plans service); a team's usage and dimensions come from ingestion's routes. */
export const teamRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/teams",
    {
      schema: {
        operationId: "createTeam",
        summary: "Create a team: users that share a budget",
        tags: ["teams"],
        body: CreateTeamBody,
        response: { 201: TeamBody, ...errors(400, 401, 409, 422) },
      },
    },
    async (request, reply) => {
      const res = await app.services.plans.createTeam(
        { productId: request.productId, externalTeamId: request.body.external_team_id, name: request.body.name },
        rpcOptions(request),
      );
      return reply.status(201).send(teamJson(res.team!));
    },
  );

  app.get(
    "/teams",
    {
      schema: {
        operationId: "listTeams",
        summary: "The product's teams in external_team_id order, cursor-paginated",
        tags: ["teams"],
        querystring: ListTeamsQuery,
        response: { 200: Type.Object({ teams: Type.Array(TeamBody), next_cursor: NextCursor }), ...errors(400, 401) },
      },
    },
    async (request) => {
      const q = request.query;
      const page = await app.services.plans.listTeams(
        { productId: request.productId, prefix: q.prefix ?? "", cursor: q.cursor, limit: q.limit },
        rpcOptions(request),
      );
      return { teams: page.teams.map(teamJson), next_cursor: page.nextCursor ?? null };
    },
  );

  app.get(
    "/teams/:team_id",
    {
      schema: {
        operationId: "getTeam",
        summary: "One team, with the plan of its current subscription and its member count",
        tags: ["teams"],
        params: TeamIdParams,
        response: { 200: TeamBody, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const res = await app.services.plans.getTeam({ productId: request.productId, externalTeamId: request.params.team_id }, rpcOptions(request));
      return teamJson(res.team!);
    },
  );

  app.post(
    "/teams/:team_id/subscription",
    {
      schema: {
        operationId: "setTeamSubscription",
        summary: "Subscribe a team to a plan for a billing period (the rules of a user's subscription)",
        description:
          "The plan's caps apply to the team's sum; each entry of its limits counts the team's sum (scope team) or each member's own (scope member).",
        tags: ["teams"],
        params: TeamIdParams,
        body: SubscriptionBody,
        response: { 200: TeamBody, ...errors(400, 401, 404, 422) },
      },
    },
    async (request) => {
      const res = await app.services.plans.setTeamSubscription(
        { productId: request.productId, externalTeamId: request.params.team_id, ...subscriptionFields(request.body) },
        rpcOptions(request),
      );
      return teamJson(res.team!);
    },
  );

  app.get(
    "/teams/:team_id/members",
    {
      schema: {
        operationId: "listTeamMembers",
        summary: "The team's current members in external_user_id order, cursor-paginated",
        tags: ["teams"],
        params: TeamIdParams,
        querystring: MembersQuery,
        response: {
          200: Type.Object({ team_id: Type.String(), members: Type.Array(UserBody), next_cursor: NextCursor }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (request) => {
      const q = request.query;
      const page = await app.services.plans.listTeamMembers(
        { productId: request.productId, externalTeamId: request.params.team_id, cursor: q.cursor, limit: q.limit },
        rpcOptions(request),
      );
      return { team_id: request.params.team_id, members: page.users.map(userJson), next_cursor: page.nextCursor ?? null };
    },
  );
};
