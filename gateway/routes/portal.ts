import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { own } from "@meter/lib/own";
import { PORTAL_TTL } from "@meter/lib/portal-tokens";
import { DateTime, Nullable, UserParams, errors, publicRoute } from "../schemas/common.ts";
import { GrantOut, grantJson } from "../schemas/credits.ts";
import { DimensionOut, dimensionJson } from "../schemas/limits.ts";
import { PortalGateEventOut, portalGateEventJson } from "../schemas/gate-events.ts";
import { HttpError } from "../errors.ts";
import { rpcOptions } from "../rpc-options.ts";
import { WIDGET_FILE } from "../widget/build.ts";

/** Gate events /portal/me shows, newest first. */
export const PORTAL_GATE_EVENTS = 20;

const MintBody = Type.Object(
  {
    ttl_seconds: Type.Optional(Type.Integer({
      minimum: PORTAL_TTL.min,
      maximum: PORTAL_TTL.max,
      default: PORTAL_TTL.default,
      description: `Lifetime in seconds, ${PORTAL_TTL.min}-${PORTAL_TTL.max}`,
    })),
  },
  { additionalProperties: false },
);

const MintOut = Type.Object({
  token: Type.String({ description: "mpt_ and 43 characters; shown once. Send it as `Authorization: Bearer <token>` to GET /portal/me" }),
  user_id: Type.String(),
  expires_at: DateTime,
});

const PortalMe = Type.Object({
  user_id: Type.String(),
  plan: Type.String({ description: 'Plan name; "none" for a user without a plan' }),
  billing_period: Type.Object({ start: DateTime, end: DateTime }),
  limits: Type.Array(DimensionOut, { description: "Every dimension of the user (as GET /users/{user_id}/limits)" }),
  credits: Nullable(
    Type.Object(
      {
        balance: Type.Number({ description: "Dollars: active grants' remaining less the overdraft" }),
        pending: Type.Number({ description: "Dollars of grants not yet effective" }),
        overdraft: Type.Number(),
        low_at: Nullable(Type.Number()),
        grants: Type.Array(Type.Omit(GrantOut, ["metadata"]), { description: "Newest first, without metadata (the product's, not the user's)" }),
      },
      { description: "The user's prepaid credits; null when the plan has credits disabled and the user holds no grant" },
    ),
  ),
  usage: Type.Object({
    period_cost: Type.Number({ description: "Dollars this billing period" }),
    period_tokens_total: Type.Integer(),
    by_model: Type.Array(Type.Object({ model: Type.String(), cost: Type.Number(), tokens: Type.Integer() }), { description: "Most costly first" }),
  }),
  gate_events: Type.Array(PortalGateEventOut, { description: `The latest ${PORTAL_GATE_EVENTS}, newest first` }),
});

const portalSecurity = [{ portalToken: [] }];

/**
 * What an end user sees of their own state: portal tokens minted by the product's backend
 * (admin or ingest key), GET /portal/me read with one of them from the user's browser, and
 * the widget that shows it. CORS on /portal/* only: plugins/portal-cors.ts.
 */
export const portalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/users/:user_id/portal-tokens",
    {
      // ttl_seconds has a default: no body mints with it.
      config: { ingest: true, optionalBody: true },
      schema: {
        operationId: "createPortalToken",
        summary: "Mint a portal token that reads this one user's state (GET /portal/me) and nothing else",
        description:
          "For the product's backend: mint one per page view and hand it to the front end. Only the token's hash is stored; " +
          "it is shown once. An admin or ingest key may mint.",
        tags: ["portal"],
        params: UserParams,
        body: MintBody,
        response: { 201: MintOut, ...errors(400, 401, 404, 422) },
      },
    },
    async (request, reply) => {
      const { productId } = request;
      const userId = request.params.user_id;
      await app.services.plans.getUser({ productId, externalUserId: userId }, rpcOptions(request));
      const res = await app.services.tenancy.createPortalToken(
        { productId, userId, ttlSeconds: request.body.ttl_seconds ?? PORTAL_TTL.default },
        rpcOptions(request),
      );
      return reply.code(201).send({ token: res.token, user_id: userId, expires_at: timestampDate(res.expiresAt!).toISOString() });
    },
  );

  app.delete(
    "/users/:user_id/portal-tokens",
    {
      config: { ingest: true },
      schema: {
        operationId: "revokePortalTokens",
        summary: "Revoke every portal token of the user",
        description: "Every gateway replica refuses them within 5 s (its authentication cache lasts at most 4 s).",
        tags: ["portal"],
        params: UserParams,
        response: { 200: Type.Object({ user_id: Type.String(), revoked: Type.Integer({ description: "Tokens revoked" }) }), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { productId } = request;
      const userId = request.params.user_id;
      await app.services.plans.getUser({ productId, externalUserId: userId }, rpcOptions(request));
      const res = await app.services.tenancy.revokePortalTokens({ productId, userId }, rpcOptions(request));
      return { user_id: userId, revoked: res.revoked };
    },
  );

  app.get(
    "/portal/me",
    {
      config: { portal: true },
      schema: {
        operationId: "getPortalMe",
        summary: "The portal token's user: plan, every dimension, credits, this period's usage by model, the latest gate events",
        description:
          "Read from the end user's browser with `Authorization: Bearer <portal token>` (CORS open to any origin, no cookies). " +
          "401 for an expired or revoked token, and for a portal token on any other route. Rate-limited per token (429 with Retry-After).",
        tags: ["portal"],
        security: portalSecurity,
        response: { 200: PortalMe, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const productId = request.productId;
      const userId = request.portal!.userId;
      const [s, gates, credits] = await Promise.all([
        app.services.ingestion.getSession({ productId, userId }, rpcOptions(request)),
        app.services.ingestion.listGateEvents({ productId, userId, limit: PORTAL_GATE_EVENTS }, rpcOptions(request)),
        app.services.ingestion.getCredits({ productId, userId }, rpcOptions(request)),
      ]);
      const u = s.currentUsage!;
      const models = new Set([...Object.keys(u.periodCostByModel), ...Object.keys(u.periodTokensByModel)]);
      const byModel = [...models]
        .map((model) => ({ model, cost: own(u.periodCostByModel, model) ?? 0, tokens: Math.round(Number(own(u.periodTokensByModel, model) ?? 0)) }))
        .sort((a, b) => b.cost - a.cost || b.tokens - a.tokens || a.model.localeCompare(b.model));
      return {
        user_id: s.userId,
        plan: s.plan,
        billing_period: {
          start: timestampDate(s.billingPeriod!.start!).toISOString(),
          end: timestampDate(s.billingPeriod!.end!).toISOString(),
        },
        limits: s.limits.map(dimensionJson),
        credits:
          s.planConfig?.creditsEnabled || credits.grants.length > 0
            ? {
                balance: credits.balance,
                pending: credits.pending,
                overdraft: credits.overdraft,
                low_at: credits.lowAt ?? null,
                grants: credits.grants.map((g) => {
                  const { metadata: _, ...grant } = grantJson(g);
                  return grant;
                }),
              }
            : null,
        usage: { period_cost: u.periodCost, period_tokens_total: Number(u.periodTokensTotal), by_model: byModel },
        gate_events: gates.events.map(portalGateEventJson),
      };
    },
  );

  app.get(
    "/portal/widget.js",
    publicRoute({
      operationId: "getPortalWidget",
      summary: "The <meter-usage> custom element (JavaScript) that renders GET /portal/me",
      tags: ["portal"],
      response: {
        200: { description: "The widget's script", content: { "text/javascript": { schema: Type.String() } } },
        ...errors(429),
      },
    }),
    async (_request, reply) => {
      if (!existsSync(WIDGET_FILE)) {
        throw new HttpError(503, "the portal widget is not built: run `npm run build:widget` (npm ci and npm start build it)");
      }
      return reply
        .type("text/javascript; charset=utf-8")
        .header("cache-control", "public, max-age=300")
        .send(await readFile(WIDGET_FILE, "utf8"));
    },
  );

  // CORS preflights of the portal routes (their headers: plugins/portal-cors.ts).
  for (const [url, operationId] of [["/portal/me", "preflightPortalMe"], ["/portal/widget.js", "preflightPortalWidget"]] as const) {
    app.options(
      url,
      publicRoute({
        operationId,
        summary: "CORS preflight: any origin may send GET with an Authorization header",
        tags: ["portal"],
        response: { 204: Type.Null({ description: "Access-Control-Allow-* headers, no body" }), ...errors(429) },
      }),
      async (_request, reply) => reply.code(204).send(null),
    );
  }
};
