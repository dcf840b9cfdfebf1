import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { UserParams, errors } from "../schemas/common.ts";
import { DimensionOut, dimensionJson } from "../schemas/limits.ts";
import { rpcOptions } from "../rpc-options.ts";

export const limitRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    "/users/:user_id/limits",
    {
      config: { ingest: true },
      schema: {
        operationId: "getUserLimits",
        summary: "Every dimension of a user with its usage and reset, for a server that checks a user without the client library",
        description:
          "The list the session view carries in `limits`: total_spend, session_spend and model_limit:<model> when the plan has them, " +
          "then one entry per entry of the plan's `limits`, in plan order. Empty for a user without a plan.",
        tags: ["usage"],
        params: UserParams,
        response: {
          200: Type.Object({ user_id: Type.String(), limits: Type.Array(DimensionOut) }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (request) => {
      const res = await app.services.ingestion.getLimits({ productId: request.productId, userId: request.params.user_id }, rpcOptions(request));
      return { user_id: res.userId, limits: res.limits.map(dimensionJson) };
    },
  );
};
