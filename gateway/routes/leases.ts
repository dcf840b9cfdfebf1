import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Lease } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { Body, DateTime, LeaseId, Nullable, UserParams, errors } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";

const Dollars = Type.Number({ minimum: 0, maximum: 1e12 });
const Tokens = (o: { description?: string } = {}) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...o });

const LeaseParams = Type.Object({ user_id: UserParams.properties.user_id, lease_id: LeaseId });

const AcquireIn = Body({
  holder: Type.Unsafe<string>({ ...LeaseId, description: "Id of the asking client replica; also the lease id (one lease per holder and period)" }),
  need: Type.Unsafe<number>({ ...Dollars, description: "Dollars the holder's next call needs; a smaller grant is no grant" }),
  want: Type.Unsafe<number>({ ...Dollars, description: "Most dollars the holder wants to hold (at least need)" }),
  ttl_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000, description: "Lease lifetime; 0 or absent: the service default (60 s)" })),
  model: Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: "Model of the holder's next call: when the plan caps its tokens, the lease also holds a slice of that cap" }),
  ),
  need_tokens: Type.Optional(Tokens({ description: "Tokens of `model` the next call needs (its pre-call estimate); default 0" })),
  want_tokens: Type.Optional(Tokens({ description: "Most tokens of `model` the holder wants to hold (at least need_tokens); default need_tokens" })),
});

const ReleaseIn = Body({
  used: Type.Unsafe<number>({ ...Dollars, description: "Dollars the holder spent from the lease in all, settled or not yet" }),
  used_tokens: Type.Optional(
    Type.Record(Type.String({ minLength: 1, maxLength: 255 }), Tokens(), {
      maxProperties: 256,
      description: "The same in tokens per model; a model left out keeps its token slice until the lease lapses",
    }),
  ),
});

const TokenLeaseOut = Type.Object({
  model: Type.String({ description: "Normalized model name" }),
  granted: Type.Integer({ description: "Tokens granted to this holder in the period in all" }),
  added: Type.Integer({ description: "Tokens granted by this request; 0 when refused" }),
  spent: Type.Integer({ description: "Tokens of usage events settled against the lease" }),
  remaining: Type.Number({ description: "Tokens of the model's cap neither settled nor held by a lease after this request" }),
  holders: Type.Integer({ description: "Holders with an outstanding token slice of the model" }),
});

const LeaseOut = Type.Object({
  lease_id: Type.String({ description: "Send it as lease_id on the usage events spent from the lease" }),
  granted: Type.Number({ description: "Dollars granted to this holder in the period in all" }),
  added: Type.Number({ description: "Dollars granted by this request; 0 when refused (the cap is reached for this holder)" }),
  spent: Type.Number({ description: "Dollars of usage events settled against the lease" }),
  expires_at: Nullable(DateTime),
  ttl_ms: Type.Integer(),
  remaining: Type.Number({ description: "Dollars of the cap neither settled nor held by a lease after this request" }),
  holders: Type.Integer({ description: "Holders with an outstanding slice" }),
  period_end: DateTime,
  spend_limited: Type.Boolean({ description: "False when the user has no finite period spend cap: the dollar fields mean nothing" }),
  tokens: Nullable(TokenLeaseOut),
});

const AcquireOut = Type.Object({
  limited: Type.Boolean({ description: "False when the user has no finite period cap: nothing to lease, no lease needed" }),
  lease: Nullable(LeaseOut),
});

function leaseJson(l: Lease) {
  return {
    lease_id: l.leaseId,
    granted: l.granted,
    added: l.added,
    spent: l.spent,
    expires_at: l.expiresAt ? timestampDate(l.expiresAt).toISOString() : null,
    ttl_ms: Number(l.ttlMs),
    remaining: l.remaining,
    holders: l.holders,
    period_end: timestampDate(l.periodEnd!).toISOString(),
    spend_limited: l.spendLimited,
    tokens: l.tokens
      ? {
          model: l.tokens.model,
          granted: Number(l.tokens.granted),
          added: Number(l.tokens.added),
          spent: Number(l.tokens.spent),
          remaining: l.tokens.remaining,
          holders: l.tokens.holders,
        }
      : null,
  };
}

export const leaseRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/users/:user_id/leases",
    {
      config: { ingest: true },
      schema: {
        operationId: "acquireLease",
        summary: "Lease a slice of the user's period spend cap (budget lease)",
        description:
          "Grants the holder a slice of cap - settled spend - slices outstanding, atomically, until expires_at; with `model`, " +
          "also a slice of that model's token cap the same way. Asking again extends the holder's lease. " +
          "Usage events spent from it carry its lease_id. 413 when the user's period has 1,000 live leases; " +
          "503 (retryable) when the budget changed under 50 grant attempts in a row.",
        tags: ["leases"],
        params: UserParams,
        body: AcquireIn,
        response: { 200: AcquireOut, ...errors(400, 401, 404, 413, 422, 503) },
      },
    },
    async (request) => {
      const b = request.body;
      const res = await app.services.ingestion.acquireLease(
        {
          productId: request.productId,
          userId: request.params.user_id,
          holder: b.holder,
          need: b.need,
          want: b.want,
          ttlMs: BigInt(b.ttl_ms ?? 0),
          model: b.model,
          needTokens: BigInt(b.need_tokens ?? 0),
          wantTokens: BigInt(b.want_tokens ?? b.need_tokens ?? 0),
        },
        rpcOptions(request),
      );
      return { limited: res.limited, lease: res.lease ? leaseJson(res.lease) : null };
    },
  );

  app.post(
    "/users/:user_id/leases/:lease_id/release",
    {
      config: { ingest: true },
      schema: {
        operationId: "releaseLease",
        summary: "Give back the unused part of a budget lease",
        description: "The lease keeps exactly `used`; events still on their way settle against it, in either order.",
        tags: ["leases"],
        params: LeaseParams,
        body: ReleaseIn,
        response: { 200: Type.Object({ lease: LeaseOut }), ...errors(400, 401, 404, 422) },
      },
    },
    async (request) => {
      const res = await app.services.ingestion.releaseLease(
        {
          productId: request.productId,
          userId: request.params.user_id,
          leaseId: request.params.lease_id,
          used: request.body.used,
          usedTokens: Object.fromEntries(Object.entries(request.body.used_tokens ?? {}).map(([m, n]) => [m, BigInt(n)])),
        },
        rpcOptions(request),
      );
      return { lease: leaseJson(res.lease!) };
    },
  );
};
