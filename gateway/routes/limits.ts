import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { TeamParams, UserParams, clientRead } from "../schemas/common.ts";
import { DimensionOut, dimensionJson } from "../schemas/limits.ts";
import { rpcOptions } from "../rpc-options.ts";

export const limitRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    "/users/:user_id/limits",
    clientRead(
      UserParams,
      Type.Object({ user_id: Type.String(), limits: Type.Array(DimensionOut) }),
      "getUserLimits",
      "Every dimension of a user with its usage and reset, for a server that checks a user without the client library",
      {
        description:
          "The list the session view carries in `limits`: total_spend, session_spend and model_limit:<model> when the plan has them, " +
          "then one entry per entry of the plan's `limits`, in plan order; then, for a member of a team with a plan in force, the team plan's " +
          "(reasons prefixed team:, scope team or member). Empty for a user without a plan and without such a team.",
      },
    ),
    async (request) => {
      const res = await app.services.ingestion.getLimits({ productId: request.productId, userId: request.params.user_id }, rpcOptions(request));
      return { user_id: res.userId, limits: res.limits.map(dimensionJson) };
    },
  );

  app.get(
    "/teams/:team_id/limits",
    clientRead(
      TeamParams,
      Type.Object({ team_id: Type.String(), limits: Type.Array(DimensionOut) }),
      "getTeamLimits",
      "The team-scope dimensions of a team's plan with the team's usage and resets",
      {
        description:
          "team:total_spend and team:model_limit:<model> when the team plan has them, then one entry per team-scope entry of its `limits`, " +
          "each over the sums of the team's members. Member-scope limits count each member apart: they are in each member's " +
          "GET /users/{user_id}/limits. Empty for a team without a plan in force.",
      },
    ),
    async (request) => {
      const res = await app.services.ingestion.getTeamLimits({ productId: request.productId, teamId: request.params.team_id }, rpcOptions(request));
      return { team_id: res.teamId, limits: res.limits.map(dimensionJson) };
    },
  );
};
