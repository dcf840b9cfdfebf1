import { localToIso } from "../inputs.ts";
import { api, getLimits, ok, type Credits, type LedgerEntry, type Usage } from "./client.ts";

/**
 * The reads a screen makes when it opens, as React Query takes them (a key and its call). The
 * screens query them, and a fresh document starts those of the screen it opens on before the
 * app is evaluated (arrival.ts): one definition of each, so the two never differ.
 */
export interface Read<T = unknown> {
  queryKey: readonly unknown[];
  queryFn: () => Promise<T>;
}

const read = <T>(queryKey: readonly unknown[], queryFn: () => Promise<T>): Read<T> => ({ queryKey, queryFn });

export const keysRead = () => read(["keys"], () => ok(api.GET("/api/v1/keys")));
export const plansRead = () => read(["plans"], () => ok(api.GET("/api/v1/config/plans")));
export const planSubscribersRead = () => read(["plan-subscribers"], () => ok(api.GET("/api/v1/analytics/plan-subscribers")));
export const endpointsRead = () => read(["endpoints"], () => ok(api.GET("/api/v1/webhooks/endpoints")));

/** The users screen's filter and page, from its URL. */
export const usersFilter = (params: URLSearchParams) => ({ prefix: params.get("prefix") ?? "", plan: params.get("plan") ?? "", cursor: params.get("cursor") ?? undefined });

/** GET /users (listUsers): prefix search, plan filter, cursor paging. */
export const usersRead = ({ prefix, plan, cursor }: ReturnType<typeof usersFilter>) =>
  read(["users", prefix, plan, cursor], () => ok(api.GET("/api/v1/users", { params: { query: { prefix: prefix || undefined, plan: plan || undefined, cursor, limit: 50 } } })));

export type Source = "auto" | "manual" | undefined;

/** The overview's window, from its URL: days (1-365, 30 unless said), the source and the team counted. */
export function overviewWindow(params: URLSearchParams) {
  const days = Math.min(365, Math.max(1, Number(params.get("days")) || 30));
  const source = (params.get("source") as Source) || undefined;
  // An external team id: every usage figure counts only what was attributed to that team.
  const team = params.get("team") || undefined;
  return { days, source, team };
}

/** The overview's reads of a window. */
export function overviewReads({ days, source, team }: ReturnType<typeof overviewWindow>) {
  const teamQuery = team ? { team_id: team } : {};
  const query = { days, ...(source ? { source } : {}), ...teamQuery };
  return {
    summary: read(["summary", days, source, team], () => ok(api.GET("/api/v1/analytics/summary", { params: { query } }))),
    series: read(["timeseries", days, source, team], () => ok(api.GET("/api/v1/analytics/timeseries", { params: { query } }))),
    gates: read(["gate-timeseries", days, team], () => ok(api.GET("/api/v1/analytics/gate-timeseries", { params: { query: { days, ...teamQuery } } }))),
    breakdown: read(["breakdown", days, source, team], () => ok(api.GET("/api/v1/analytics/breakdown", { params: { query } }))),
    top: read(["top-users", days, source, team], () => ok(api.GET("/api/v1/analytics/top-users", { params: { query: { ...query, limit: 10 } } }))),
    topTeams: read(["top-teams", days, source, team], () => ok(api.GET("/api/v1/analytics/top-teams", { params: { query: { ...query, limit: 10 } } }))),
    plans: planSubscribersRead(),
  };
}

const userPath = (id: string) => ({ path: { user_id: id } });

/** The user screen's reads of the user, its session and its dimensions. */
export const userRead = (id: string) => read(["user", id], () => ok(api.GET("/api/v1/users/{user_id}", { params: userPath(id) })));
export const sessionRead = (id: string) => read(["session", id], () => ok(api.GET("/api/v1/users/{user_id}/session", { params: userPath(id) })));
export const limitsRead = (id: string) => read(["limits", id], () => getLimits(id));

/** A user's usage by model in a period (the usage card's; its period is in the URL, the current billing period unless said). */
export const usagePeriod = (params: URLSearchParams) => params.get("period") ?? "current_period";
export const userUsageRead = (id: string, period: string): Read<Usage> =>
  read(["usage", id, period], () => ok(api.GET("/api/v1/users/{user_id}/usage", { params: { ...userPath(id), query: { period, breakdown: "model" } } })));
export const teamUsageRead = (id: string, period: string): Read<Usage> =>
  read(["team-usage", id, period], () => ok(api.GET("/api/v1/teams/{team_id}/usage", { params: { path: { team_id: id }, query: { period, breakdown: "model" } } })));

/** The user screen's gate-event filter, from its URL (the page's cursor is `gcursor`). */
export const gateEventsFilter = (params: URLSearchParams) => ({
  status: (params.get("status") as "soft_gate" | "hard_gate" | null) ?? undefined,
  gate_reason: params.get("reason") ?? undefined,
  blocked_only: params.get("blocked") === "1",
  since: params.get("since") ?? "",
  until: params.get("until") ?? "",
  limit: Number(params.get("limit")) || 25,
});

/** A page of a user's gate events, newest first. */
export const gateEventsRead = (id: string, f: ReturnType<typeof gateEventsFilter>, cursor: string | undefined) =>
  read(["gate-events", id, f, cursor], () =>
    ok(
      api.GET("/api/v1/users/{user_id}/gate-events", {
        params: { ...userPath(id), query: { status: f.status, gate_reason: f.gate_reason, blocked_only: f.blocked_only, since: localToIso(f.since), until: localToIso(f.until), cursor, limit: f.limit } },
      }),
    ),
  );

/** An owner's credits: a user's, or a team's pool (its key `team:<id>`, so that a user and a team of one id are apart). */
export const creditsKey = (kind: "user" | "team", id: string) => (kind === "team" ? `team:${id}` : id);
type Balance = Omit<Credits, "user_id">;
export const creditsRead = (kind: "user" | "team", id: string) =>
  read<Balance>(["credits", creditsKey(kind, id)], () =>
    kind === "team" ? ok(api.GET("/api/v1/teams/{team_id}/credits", { params: { path: { team_id: id } } })) : ok(api.GET("/api/v1/users/{user_id}/credits", { params: userPath(id) })),
  );

/** What the console reads of a ledger page, the same for a user and a team. */
export interface LedgerPage {
  entries: LedgerEntry[];
  next_cursor: string | null;
}

/** The ledger page sizes the console offers, and the one shown unless the URL says (`llimit`). */
export const LEDGER_PAGE_SIZES = [10, 25, 100];
export const ledgerLimit = (params: URLSearchParams) => Number(params.get("llimit")) || 25;

/** A page of an owner's credit ledger, newest first (the page's cursor is `lcursor` in the URL). */
export const creditLedgerRead = (kind: "user" | "team", id: string, limit: number, cursor: string | undefined) =>
  read<LedgerPage>(["credit-ledger", creditsKey(kind, id), limit, cursor], () =>
    kind === "team"
      ? ok(api.GET("/api/v1/teams/{team_id}/credits/ledger", { params: { path: { team_id: id }, query: { limit, cursor } } }))
      : ok(api.GET("/api/v1/users/{user_id}/credits/ledger", { params: { ...userPath(id), query: { limit, cursor } } })),
  );

/**
 * The user's last session_spend gate event: the service counts spend per period, a session's
 * spend is counted by the client library, so this is the closest figure the API has.
 */
export const lastSessionSpendRead = (id: string) =>
  read(["gate-events", id, "session_spend"], () =>
    ok(api.GET("/api/v1/users/{user_id}/gate-events", { params: { ...userPath(id), query: { gate_reason: "session_spend", limit: 1, blocked_only: false } } })),
  );
