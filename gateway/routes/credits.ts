import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { UserParams, errors, parseDateTime } from "../schemas/common.ts";
import { CreditsOut, GrantId, GrantIn, GrantOut, LedgerPage, grantJson, ledgerEntryJson } from "../schemas/credits.ts";
import { rpcOptions } from "../rpc-options.ts";

const GrantParams = Type.Object({ user_id: UserParams.properties.user_id, grant_id: GrantId });

const LedgerQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  cursor: Type.Optional(Type.String({ maxLength: 64, description: "next_cursor of the previous page" })),
});

const timestamp = (s: string | null | undefined) => (s ? timestampFromDate(parseDateTime(s)) : undefined);

/** Prepaid credits of a user (docs/api.md, "Selling credits"); admin keys only. */
export const creditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/users/:user_id/credits",
    {
      schema: {
        operationId: "createCreditGrant",
        summary: "Grant a user prepaid credits",
        description:
          "201 with the grant (and its remaining) when new; the same id with the same fields again is a no-op answered 200; " +
          "the same id with other fields is 409. A new grant first pays any overdraft. At most 1,000 live grants per user (409 beyond).",
        tags: ["credits"],
        params: UserParams,
        body: GrantIn,
        response: { 200: GrantOut, 201: GrantOut, ...errors(400, 401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const res = await app.services.ingestion.createCreditGrant(
        {
          productId: request.productId,
          userId: request.params.user_id,
          grantId: b.id,
          amount: b.amount,
          kind: b.kind,
          priority: b.priority,
          effectiveAt: timestamp(b.effective_at),
          expiresAt: timestamp(b.expires_at),
          description: b.description ?? undefined,
          metadata: (b.metadata ?? undefined) as never,
        },
        rpcOptions(request),
      );
      return reply.status(res.created ? 201 : 200).send(grantJson(res.grant!));
    },
  );

  app.get(
    "/users/:user_id/credits",
    {
      schema: {
        operationId: "getCredits",
        summary: "A user's credit balance, pending credits, overdraft and grants",
        tags: ["credits"],
        params: UserParams,
        response: { 200: CreditsOut, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const c = await app.services.ingestion.getCredits({ productId: request.productId, userId: request.params.user_id }, rpcOptions(request));
      return {
        user_id: c.userId,
        balance: c.balance,
        pending: c.pending,
        overdraft: c.overdraft,
        low_at: c.lowAt ?? null,
        grants: c.grants.map(grantJson),
      };
    },
  );

  app.post(
    "/users/:user_id/credits/:grant_id/void",
    {
      schema: {
        operationId: "voidCreditGrant",
        summary: "Void a grant: what is left of it goes to 0",
        description: "Voiding a grant that is already voided, expired or depleted answers it unchanged.",
        tags: ["credits"],
        params: GrantParams,
        response: { 200: GrantOut, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const res = await app.services.ingestion.voidCreditGrant(
        { productId: request.productId, userId: request.params.user_id, grantId: request.params.grant_id },
        rpcOptions(request),
      );
      return grantJson(res.grant!);
    },
  );

  app.get(
    "/users/:user_id/credits/ledger",
    {
      schema: {
        operationId: "listCreditLedger",
        summary: "A user's credit ledger, newest first, cursor-paginated",
        description: "Usage is summed per grant and UTC hour, so the ledger grows with time, not with events.",
        tags: ["credits"],
        params: UserParams,
        querystring: LedgerQuery,
        response: { 200: LedgerPage, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const res = await app.services.ingestion.listCreditLedger(
        { productId: request.productId, userId: request.params.user_id, limit: request.query.limit, cursor: request.query.cursor },
        rpcOptions(request),
      );
      return { user_id: res.userId, entries: res.entries.map(ledgerEntryJson), next_cursor: res.nextCursor ?? null };
    },
  );
};
