import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { User } from "@meter/proto/meter/plans/v1/plans_pb";
import { Body, DateTime, Nullable, errors, parseDateTime } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";

export const UserBody = Type.Object({
  id: Type.String({ format: "uuid" }),
  external_user_id: Type.String(),
  name: Nullable(Type.String()),
  plan_name: Nullable(Type.String()),
  billing_subscription_id: Nullable(Type.String()),
  created_at: DateTime,
  updated_at: DateTime,
});

const CreateUserBody = Body({
  external_user_id: Type.String({ minLength: 1, maxLength: 255, description: "The product's own id; opaque" }),
  name: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
});

const SubscriptionBody = Body({
  plan_id: Type.String({ format: "uuid", description: "Plan id; plan names are not accepted" }),
  billing_subscription_id: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  period_start: Type.Optional(Nullable(DateTime)),
  period_end: Type.Optional(Nullable({ ...DateTime, description: "Exclusive end of the billing period" })),
});

const UserIdParams = Type.Object({
  user_id: Type.String({ minLength: 1, description: "external_user_id (1-255 characters), URL-encoded" }),
});

export function userJson(u: User) {
  return {
    id: u.id,
    external_user_id: u.externalUserId,
    name: u.name ?? null,
    plan_name: u.planName ?? null,
    billing_subscription_id: u.billingSubscriptionId ?? null,
    created_at: timestampDate(u.createdAt!).toISOString(),
    updated_at: timestampDate(u.updatedAt!).toISOString(),
  };
}

const date = (s: string | null | undefined) => (s ? timestampFromDate(parseDateTime(s)) : undefined);

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
      const body = request.body;
      const res = await app.services.plans.setSubscription(
        {
          productId: request.productId,
          externalUserId: request.params.user_id,
          planId: body.plan_id,
          billingSubscriptionId: body.billing_subscription_id ?? undefined,
          periodStart: date(body.period_start),
          periodEnd: date(body.period_end),
        },
        rpcOptions(request),
      );
      return userJson(res.user!);
    },
  );
};

