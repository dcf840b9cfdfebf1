import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { ApiKey } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { fromTimestamp, timestampFromDate } from "@meter/lib/time";
import { Body, DateTime, Nullable, errors, iso, parseDateTime } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";

/** Longest key name (the tenancy service checks it too). */
export const KEY_NAME_MAX = 100;

const Scope = Type.Union([Type.Literal("admin"), Type.Literal("ingest")], {
  description: "admin: every route; ingest: what a client process needs (health, plans, sessions, usage, events, leases)",
});

const KeyBody = Type.Object({
  id: Type.String({ format: "uuid" }),
  name: Type.String(),
  scope: Scope,
  prefix: Type.String({ description: "The key's first characters, to recognise it" }),
  created_at: DateTime,
  last_used_at: Nullable(DateTime),
  expires_at: Nullable(DateTime),
});

const CreateKeyBody = Body({
  name: Type.String({ minLength: 1, maxLength: KEY_NAME_MAX }),
  scope: Type.Optional(Type.Union([Type.Literal("admin"), Type.Literal("ingest")], { default: "admin" })),
  expires_at: Type.Optional(Nullable(Type.Unsafe<string>({ ...DateTime, description: "When the key stops working; null: never" }))),
});

const { last_used_at: _lastUsed, ...createdFields } = KeyBody.properties;
const CreatedKeyBody = Type.Object({ ...createdFields, key: Type.String({ description: "Shown only here; store it now" }) });

const KeyParams = Type.Object({ id: Type.String({ format: "uuid" }) });

function keyJson(k: ApiKey) {
  return {
    id: k.id,
    name: k.name,
    scope: k.scope as "admin" | "ingest",
    prefix: k.prefix,
    created_at: fromTimestamp(k.createdAt)!.toISOString(),
    last_used_at: iso(fromTimestamp(k.lastUsedAt)),
    expires_at: iso(fromTimestamp(k.expiresAt)),
  };
}

export const keyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/keys",
    {
      schema: {
        operationId: "createKey",
        summary: "Create an API key (the key is shown once)",
        description: "A product holds at most 50 keys (400 beyond).",
        tags: ["keys"],
        body: CreateKeyBody,
        response: { 201: CreatedKeyBody, ...errors(400, 401, 403, 422) },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const res = await app.services.tenancy.createApiKey(
        {
          productId: request.productId,
          name: b.name,
          scope: b.scope ?? "admin",
          expiresAt: b.expires_at ? timestampFromDate(parseDateTime(b.expires_at)) : undefined,
        },
        rpcOptions(request),
      );
      const { last_used_at: _unused, ...key } = keyJson(res.key!);
      return reply.status(201).send({ ...key, key: res.apiKey });
    },
  );

  app.get(
    "/keys",
    {
      schema: {
        operationId: "listKeys",
        summary: "List the product's API keys (never their secrets)",
        description: "last_used_at is kept within a minute of the key's last use.",
        tags: ["keys"],
        response: { 200: Type.Object({ keys: Type.Array(KeyBody) }), ...errors(401, 403) },
      },
    },
    async (request) => {
      const res = await app.services.tenancy.listApiKeys({ productId: request.productId }, rpcOptions(request));
      return { keys: res.keys.map(keyJson) };
    },
  );

  app.delete(
    "/keys/:id",
    {
      schema: {
        operationId: "revokeKey",
        summary: "Revoke an API key",
        description:
          "Every gateway refuses the key (401) within 5 seconds. 409 when it is the product's last admin key " +
          "that has not expired, so that nobody locks the product out.",
        tags: ["keys"],
        params: KeyParams,
        response: { 204: Type.Null({ description: "Revoked" }), ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await app.services.tenancy.revokeApiKey({ productId: request.productId, keyId: request.params.id }, rpcOptions(request));
      return reply.status(204).send(null);
    },
  );
};
