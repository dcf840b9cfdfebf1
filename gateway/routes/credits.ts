import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type, type TObject, type TString } from "typebox";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { TeamParams, UserParams, errors, parseDateTime } from "../schemas/common.ts";
import { CreditsOut, GrantIn, GrantOut, LedgerPage, TeamCreditsOut, TeamLedgerPage, grantJson, ledgerEntryJson, StoredGrantId } from "../schemas/credits.ts";
import { rpcOptions } from "../rpc-options.ts";

const LedgerQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  cursor: Type.Optional(Type.String({ maxLength: 2000, description: "next_cursor of the previous page" })),
});

const timestamp = (s: string | null | undefined) => (s ? timestampFromDate(parseDateTime(s)) : undefined);

/**
 * Whose credits a set of routes serves: a user's (`/users/{user_id}/credits...`) or a team's
 * shared pool (`/teams/{team_id}/credits...`, BUDGETS.md §4), with the same shapes but the id's name.
 */
interface Owner {
  path: "users/:user_id" | "teams/:team_id";
  key: "user_id" | "team_id";
  /** Suffix of the operation ids ("" for a user's, "Team" for a team's). */
  op: "" | "Team";
  noun: string;
  params: TObject<Record<string, TString>>;
  /** The request's owner fields for the ingestion RPCs. */
  ids(id: string): { userId: string; teamId?: string };
  creditsOut: typeof CreditsOut | typeof TeamCreditsOut;
  ledgerOut: typeof LedgerPage | typeof TeamLedgerPage;
}

const USER: Owner = {
  path: "users/:user_id",
  key: "user_id",
  op: "",
  noun: "a user",
  params: UserParams,
  ids: (id) => ({ userId: id }),
  creditsOut: CreditsOut,
  ledgerOut: LedgerPage,
};

const TEAM: Owner = {
  path: "teams/:team_id",
  key: "team_id",
  op: "Team",
  noun: "a team (its shared pool, drawn after each member's own credits)",
  params: TeamParams,
  ids: (id) => ({ userId: "", teamId: id }),
  creditsOut: TeamCreditsOut,
  ledgerOut: TeamLedgerPage,
};

/** Prepaid credits of users and teams (docs/api.md, "Selling credits"); admin keys only. */
export const creditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const o of [USER, TEAM]) {
    const idOf = (params: unknown) => (params as Record<string, string>)[o.key]!;
    const GrantParams = Type.Object({ [o.key]: o.params.properties[o.key]!, grant_id: StoredGrantId });

    app.post(
      `/${o.path}/credits`,
      {
        schema: {
          operationId: `create${o.op}CreditGrant`,
          summary: `Grant ${o.noun} prepaid credits`,
          description:
            "201 with the grant (and its remaining) when new; the same id with the same fields again is a no-op answered 200; " +
            `the same id with other fields is 409. A new grant first pays any overdraft. At most 1,000 live grants per ${o.op ? "team" : "user"} (409 beyond).`,
          tags: ["credits"],
          params: o.params,
          body: GrantIn,
          response: { 200: GrantOut, 201: GrantOut, ...errors(400, 401, 403, 404, 409, 422) },
        },
      },
      async (request, reply) => {
        const b = request.body;
        const res = await app.services.ingestion.createCreditGrant(
          {
            productId: request.productId,
            ...o.ids(idOf(request.params)),
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
      `/${o.path}/credits`,
      {
        schema: {
          operationId: `get${o.op}Credits`,
          summary: `The credit balance, pending credits, overdraft and grants of ${o.noun}`,
          tags: ["credits"],
          params: o.params,
          response: { 200: o.creditsOut, ...errors(400, 401, 403, 404) },
        },
      },
      async (request) => {
        const id = idOf(request.params);
        const c = await app.services.ingestion.getCredits({ productId: request.productId, ...o.ids(id) }, rpcOptions(request));
        return {
          [o.key]: id,
          balance: c.balance,
          pending: c.pending,
          overdraft: c.overdraft,
          low_at: c.lowAt ?? null,
          grants: c.grants.map(grantJson),
        } as never;
      },
    );

    app.post(
      `/${o.path}/credits/:grant_id/void`,
      {
        schema: {
          operationId: `void${o.op}CreditGrant`,
          summary: `Void a grant of ${o.op ? "a team" : "a user"}: what is left of it goes to 0`,
          description: "Voiding a grant that is already voided, expired or depleted answers it unchanged.",
          tags: ["credits"],
          params: GrantParams,
          response: { 200: GrantOut, ...errors(400, 401, 403, 404) },
        },
      },
      async (request) => {
        const params = request.params as Record<string, string>;
        const res = await app.services.ingestion.voidCreditGrant(
          { productId: request.productId, ...o.ids(idOf(params)), grantId: params.grant_id! },
          rpcOptions(request),
        );
        return grantJson(res.grant!);
      },
    );

    app.get(
      `/${o.path}/credits/ledger`,
      {
        schema: {
          operationId: `list${o.op}CreditLedger`,
          summary: `The credit ledger of ${o.op ? "a team's pool" : "a user"}, newest first, cursor-paginated`,
          description: "Usage is summed per grant and UTC hour, so the ledger grows with time, not with events.",
          tags: ["credits"],
          params: o.params,
          querystring: LedgerQuery,
          response: { 200: o.ledgerOut, ...errors(400, 401, 403, 404) },
        },
      },
      async (request) => {
        const id = idOf(request.params);
        const res = await app.services.ingestion.listCreditLedger(
          { productId: request.productId, ...o.ids(id), limit: request.query.limit, cursor: request.query.cursor },
          rpcOptions(request),
        );
        return { [o.key]: id, entries: res.entries.map(ledgerEntryJson), next_cursor: res.nextCursor ?? null } as never;
      },
    );
  }
};
