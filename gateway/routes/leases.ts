import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type, type Static } from "typebox";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Lease, TokenLease, WindowLease } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { Body, DateTime, KeyedBy, LeaseId, Nullable, UserParams, errors } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";

const Dollars = Type.Number({ minimum: 0, maximum: 1e12 });
const Tokens = (o: { description?: string } = {}) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...o });

const LeaseParams = Type.Object({ user_id: UserParams.properties.user_id, lease_id: LeaseId });

const Dimension = Type.String({ minLength: 1, maxLength: 512, description: "The limit's dimension key: `<metric>:<window>:<duration_minutes or ''>:<model or ''>`" });
const WindowAmount = (description: string) => Type.Number({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });

const WindowAskIn = Type.Object(
  {
    dimension: Dimension,
    window_start: Type.Optional(Nullable(DateTime)),
    need: WindowAmount("What the holder's next call needs of the window, in the limit's unit (dollars for spend, else tokens or requests); a smaller grant is no grant"),
    want: WindowAmount("Most the holder wants to hold of the window (at least need)"),
  },
  { additionalProperties: false },
);

const WindowUseIn = Type.Object(
  { dimension: Dimension, window_start: Type.Optional(Nullable(DateTime)), used: WindowAmount("What the holder used of the window's slice in all, settled or not yet") },
  { additionalProperties: false },
);

const WindowAsks = (description: string) => Type.Array(WindowAskIn, { maxItems: 64, description });
const WindowUses = (description: string) => Type.Array(WindowUseIn, { maxItems: 64, description });

/** What a request offers back of a cap's slice (`spare`, `spare_tokens`), for the user's caps and the team's alike. */
const offers = (spare: string, spareTokens: string) => ({
  spare: Type.Optional(Type.Unsafe<number>({ ...Dollars, description: spare })),
  spare_tokens: Type.Optional(Tokens({ description: spareTokens })),
});

const TeamAskIn = Type.Object(
  {
    need: Type.Unsafe<number>({ ...Dollars, description: "Dollars of the team's period spend cap the holder's next call needs; a smaller grant is no grant" }),
    want: Type.Unsafe<number>({ ...Dollars, description: "Most dollars of the team's cap the holder wants to hold (at least need)" }),
    windows: Type.Optional(
      WindowAsks("Slices of the windows of the team plan's team-scope limits, as `windows` for the user's plan: one slice per holder, shared by every member it serves"),
    ),
    model: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: "Model of the holder's next call: when the team plan caps its tokens, the lease also holds a slice of the team's cap" }),
    ),
    need_tokens: Type.Optional(Tokens({ description: "Tokens of `model` of the team's cap the next call needs; default 0" })),
    want_tokens: Type.Optional(Tokens({ description: "Most tokens of `model` of the team's cap the holder wants to hold (at least need_tokens); default need_tokens" })),
    ...offers(
      "Dollars of the holder's unused slice of the team's cap it will not spend before this answer comes, as `spare` for the user's cap: when the slice holds more than an equal share of the team cap's unsettled part among its holders and one more, the excess goes back, at most this much (`team.returned`), and nothing is granted. Default 0",
      "The same in tokens of `model`'s team cap (`team.tokens.returned`). Default 0",
    ),
  },
  {
    additionalProperties: false,
    description:
      "A slice of the period spend cap of the user's team (its plan in force now), kept in the team's counter: one slice per holder and team period, shared by every member the holder serves",
  },
);

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
  windows: Type.Optional(
    WindowAsks(
      "Slices of the windows of the plan's `limits` the holder's calls count in: a calendar or period window by a time in it (`window_start`, absent: now), a rolling window by its dimension alone",
    ),
  ),
  ...offers(
    "Dollars of the holder's unused slice it will not spend before this answer comes: when the lease holds more than an equal share of the cap's unsettled part among the holders and one more, the excess goes back, at most this much (`returned`), and nothing is granted; else `need` and `want` are granted as without it. Default 0",
    "The same in tokens of `model`'s cap (`tokens.returned`). Default 0",
  ),
  team: Type.Optional(TeamAskIn),
  member_windows: Type.Optional(
    WindowAsks("Slices of the windows of the member-scope limits of the user's team plan (the user's own seat windows), as `windows` for the user's plan"),
  ),
});

const ReleaseIn = Body({
  used: Type.Unsafe<number>({ ...Dollars, description: "Dollars the holder spent from the lease in all, settled or not yet" }),
  used_tokens: Type.Optional(
    KeyedBy(Tokens(), {
      maxProperties: 256,
      propertyNames: { minLength: 1, maxLength: 255 },
      description: "The same in tokens per model; a model left out keeps its token slice until the lease lapses",
    }),
  ),
  used_windows: Type.Optional(WindowUses("The same per window slice; a window left out keeps its slice until the lease lapses or the window ends")),
  team_used: Type.Optional(
    Type.Unsafe<number>({ ...Dollars, description: "Dollars the holder spent from its slice of the user's team's cap in all (every member it serves); absent: the team slice is kept until it lapses" }),
  ),
  team_used_windows: Type.Optional(WindowUses("The same per slice of the team's windows; a window left out keeps its slice until the lease lapses or the window ends")),
  team_used_tokens: Type.Optional(
    KeyedBy(Tokens(), {
      maxProperties: 256,
      propertyNames: { minLength: 1, maxLength: 255 },
      description: "The same per model of the team's token caps; a model left out keeps its team token slice until the lease lapses",
    }),
  ),
  used_member_windows: Type.Optional(WindowUses("The same per slice of the member-scope windows of the user's team plan")),
});

const WindowLeaseOut = Type.Object({
  dimension: Type.String({ description: "The dimension key asked for" }),
  limited: Type.Boolean({ description: "False when the plan in force has no limit of this dimension: nothing leased, no slice needed" }),
  window_start: Nullable(DateTime),
  window_end: Nullable(DateTime),
  granted: Type.Number({ description: "Granted to this holder in the window in all, in the limit's unit (dollars for spend)" }),
  added: Type.Number({ description: "Granted by this request; 0 when refused" }),
  spent: Type.Number({ description: "Usage settled against the slice" }),
  remaining: Type.Number({ description: "Of the window's hard mark, neither counted nor held by a lease after this request" }),
  holders: Type.Integer({ description: "Holders with an outstanding slice of the window" }),
});

const TokenLeaseOut = Type.Object({
  model: Type.String({ description: "Normalized model name" }),
  granted: Type.Integer({ description: "Tokens granted to this holder in the period in all" }),
  added: Type.Integer({ description: "Tokens granted by this request; 0 when refused" }),
  returned: Type.Integer({ description: "Tokens taken back by this request (of `spare_tokens`)" }),
  spent: Type.Integer({ description: "Tokens of usage events settled against the lease" }),
  remaining: Type.Number({ description: "Tokens of the model's cap neither settled nor held by a lease after this request" }),
  holders: Type.Integer({ description: "Holders with an outstanding token slice of the model" }),
});

const TeamLeaseOut = Type.Object({
  team_id: Type.String({ description: "The user's team (external id)" }),
  spend_limited: Type.Boolean({ description: "False when the team plan has no period spend cap: nothing leased, no slice needed" }),
  granted: Type.Number({ description: "Dollars of the team's cap granted to this holder in the team's period in all" }),
  added: Type.Number({ description: "Dollars granted by this request; 0 when refused" }),
  spent: Type.Number({ description: "Dollars of usage events settled against the team slice" }),
  remaining: Type.Number({ description: "Dollars of the team's cap neither settled nor held by a lease after this request" }),
  holders: Type.Integer({ description: "Holders with an outstanding slice of the team's cap" }),
  returned: Type.Number({ description: "Dollars taken back from the team slice by this request (of `team.spare`); `granted` is what the slice holds after it" }),
  expires_at: Nullable(DateTime),
  period_end: DateTime,
  windows: Type.Array(WindowLeaseOut, { description: "One per team window asked for (`team.windows`), in the order asked" }),
  tokens: Nullable(TokenLeaseOut),
});

const LeaseOut = Type.Object({
  lease_id: Type.String({ description: "Send it as lease_id on the usage events spent from the lease" }),
  granted: Type.Number({ description: "Dollars granted to this holder in the period in all" }),
  added: Type.Number({ description: "Dollars granted by this request; 0 when refused (the cap is reached for this holder)" }),
  returned: Type.Number({ description: "Dollars taken back by this request (of `spare`); `granted` is what the lease holds after it" }),
  spent: Type.Number({ description: "Dollars of usage events settled against the lease" }),
  expires_at: Nullable(DateTime),
  ttl_ms: Type.Integer(),
  remaining: Type.Number({ description: "Dollars of the cap neither settled nor held by a lease after this request" }),
  holders: Type.Integer({ description: "Holders with an outstanding slice" }),
  period_end: DateTime,
  spend_limited: Type.Boolean({ description: "False when the user has no finite period spend cap: the dollar fields mean nothing" }),
  tokens: Nullable(TokenLeaseOut),
  windows: Type.Array(WindowLeaseOut, { description: "One per window asked for, in the order asked (empty when none was)" }),
  team: Type.Union([TeamLeaseOut, Type.Null()], { description: "The team slice, when `team` was asked (or `team_used` given) and the user is in a team with a plan in force" }),
  member_windows: Type.Array(WindowLeaseOut, { description: "One per member-scope window asked for (`member_windows`), in the order asked" }),
});

const AcquireOut = Type.Object({
  limited: Type.Boolean({
    description: "False when nothing asked for is capped (the user's period caps and windows, and with `team` the period spend of the user's team): nothing to lease, no lease needed",
  }),
  lease: Nullable(LeaseOut),
});

function leaseJson(l: Lease) {
  return {
    lease_id: l.leaseId,
    granted: l.granted,
    added: l.added,
    returned: l.returned,
    spent: l.spent,
    expires_at: l.expiresAt ? timestampDate(l.expiresAt).toISOString() : null,
    ttl_ms: Number(l.ttlMs),
    remaining: l.remaining,
    holders: l.holders,
    period_end: timestampDate(l.periodEnd!).toISOString(),
    spend_limited: l.spendLimited,
    tokens: l.tokens ? tokenLeaseJson(l.tokens) : null,
    windows: l.windows.map(windowLeaseJson),
    team: l.team
      ? {
          team_id: l.team.teamId,
          spend_limited: l.team.spendLimited,
          granted: l.team.granted,
          added: l.team.added,
          spent: l.team.spent,
          remaining: l.team.remaining,
          holders: l.team.holders,
          returned: l.team.returned,
          expires_at: l.team.expiresAt ? timestampDate(l.team.expiresAt).toISOString() : null,
          period_end: timestampDate(l.team.periodEnd!).toISOString(),
          windows: l.team.windows.map(windowLeaseJson),
          tokens: l.team.tokens ? tokenLeaseJson(l.team.tokens) : null,
        }
      : null,
    member_windows: l.memberWindows.map(windowLeaseJson),
  };
}

function tokenLeaseJson(t: TokenLease) {
  return { model: t.model, granted: Number(t.granted), added: Number(t.added), returned: Number(t.returned), spent: Number(t.spent), remaining: t.remaining, holders: t.holders };
}

function windowLeaseJson(w: WindowLease) {
  return {
    dimension: w.dimension,
    limited: w.limited,
    window_start: w.windowStart ? timestampDate(w.windowStart).toISOString() : null,
    window_end: w.windowEnd ? timestampDate(w.windowEnd).toISOString() : null,
    granted: w.granted,
    added: w.added,
    spent: w.spent,
    remaining: w.remaining,
    holders: w.holders,
  };
}

const at = (iso: string | null | undefined) => (iso ? timestampFromDate(new Date(iso)) : undefined);
const windowAsks = (asks: Static<typeof WindowAskIn>[] = []) => asks.map((w) => ({ dimension: w.dimension, windowStart: at(w.window_start), need: w.need, want: w.want }));
const bigints = (used: Record<string, number> = {}) => Object.fromEntries(Object.entries(used).map(([m, n]) => [m, BigInt(n)]));
const windowUses = (uses: Static<typeof WindowUseIn>[] = []) => uses.map((w) => ({ dimension: w.dimension, windowStart: at(w.window_start), used: w.used }));

export const leaseRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/users/:user_id/leases",
    {
      config: { ingest: true },
      schema: {
        operationId: "acquireLease",
        summary: "Lease a slice of the user's period caps and windows (budget lease)",
        description:
          "Grants the holder a slice of cap - settled spend - slices outstanding, atomically, until expires_at; with `model`, " +
          "also a slice of that model's token cap the same way; with `windows`, a slice of each window of the plan's `limits` named " +
          "(cap x hard_gate_at - counted in the window - slices outstanding; a slice of a calendar window is worth nothing once it ends); " +
          "with `team`, a slice of the period spend cap of the user's team and of each window of its team-scope limits named, kept beside the team's counts, shared by every member the holder serves. " +
          "Asking again extends the holder's lease. " +
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
          spare: b.spare ?? 0,
          spareTokens: BigInt(b.spare_tokens ?? 0),
          windows: windowAsks(b.windows),
          team: b.team && {
            need: b.team.need,
            want: b.team.want,
            windows: windowAsks(b.team.windows),
            model: b.team.model,
            needTokens: BigInt(b.team.need_tokens ?? 0),
            wantTokens: BigInt(b.team.want_tokens ?? b.team.need_tokens ?? 0),
            spare: b.team.spare ?? 0,
            spareTokens: BigInt(b.team.spare_tokens ?? 0),
          },
          memberWindows: windowAsks(b.member_windows),
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
          usedTokens: bigints(request.body.used_tokens),
          usedWindows: windowUses(request.body.used_windows),
          teamUsed: request.body.team_used,
          teamUsedWindows: windowUses(request.body.team_used_windows),
          teamUsedTokens: bigints(request.body.team_used_tokens),
          usedMemberWindows: windowUses(request.body.used_member_windows),
        },
        rpcOptions(request),
      );
      return { lease: leaseJson(res.lease!) };
    },
  );
};
