import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "wouter";
import { ApiError, api, getTeamLimits, mapLimited, ok, type Session, type Team, type User } from "../api/client.ts";
import { plansRead, teamUsageRead } from "../api/reads.ts";
import { Card, DataTable, Facts, Field, FormAlert, InlineForm, ListQuery, num, Query, Screen, Time } from "../components.tsx";
import { DimensionBar, Reset, untilResetRefetch, useNow } from "../dimension-bars.tsx";
import { usePaging, useUrlState } from "../url-state.ts";
import { fmtInt, fmtMoney } from "../format.ts";
import { blockingIndex, describeLimit, dimensionLabel, fmtMetric, type Dimension } from "../limits.ts";
import { SubscriptionForm } from "./subscription-form.tsx";
import { UsageByModel } from "./usage-by-model.tsx";
import { UserCredits } from "./user-credits.tsx";

const p = (id: string) => ({ path: { team_id: id } });
const userHref = (userId: string) => `/users/${encodeURIComponent(userId)}`;

/** A team: its plan, its subscription, its members (BUDGETS.md §4). */
export function TeamScreen({ id }: { id: string }) {
  const team = useQuery({ queryKey: ["team", id], queryFn: () => ok(api.GET("/api/v1/teams/{team_id}", { params: p(id) })) });
  const queryClient = useQueryClient();
  const members = useMembers(id);
  return (
    <Screen title={id} crumbs={<Link href="/teams">Teams</Link>}>
      <Query q={team} label="Loading team">
        {(t) => (
          <>
            <div className="grid-2">
              <TeamPlan team={t} />
              <Card title="Usage against the team's limits" className="team-limits">
                <TeamLimits id={id} hasPlan={t.plan_name !== null} members={members.sessions.data} />
              </Card>
            </div>
            <UsageByModel
              read={(period) => teamUsageRead(id, period)}
              empty="No usage by the team's members in this period."
            />
            <Members id={id} members={members} />
            <TeamCredits id={id} planName={t.plan_name} />
            <div className="grid-2">
              <SubscriptionForm
                current={undefined}
                save={(body) => ok(api.POST("/api/v1/teams/{team_id}/subscription", { params: p(id), body }))}
                onSaved={() => {
                  for (const k of ["team", "teams", "team-limits", "team-usage", "team-member-sessions"]) queryClient.invalidateQueries({ queryKey: [k] });
                }}
              />
              <AddMember id={id} />
            </div>
          </>
        )}
      </Query>
    </Screen>
  );
}

/** The team's shared pool (drawn after each member's own credits): the user page's credits card, for the team. */
function TeamCredits({ id, planName }: { id: string; planName: string | null }) {
  const plans = useQuery({ ...plansRead(), enabled: planName !== null });
  const plan = plans.data?.plans.find((x) => x.name === planName);
  return <UserCredits kind="team" id={id} draws={planName === null ? "no plan" : plan?.credits_enabled} />;
}

function TeamPlan({ team }: { team: Team }) {
  const caps = useTeamCaps(team.plan_name);
  return (
    <Card title="Plan">
      <Facts
        facts={[
          ["Name", team.name],
          ["Plan", team.plan_name ?? "no plan (members are held by their own plans only)"],
          caps && ["Caps", caps.length === 0 ? "none" : <CapList caps={caps} />],
          ["Billing subscription", team.billing_subscription_id ?? "—"],
          ["Members", team.member_count],
          ["Created", <Time iso={team.created_at} />],
        ]}
      />
    </Card>
  );
}

/**
 * What the team's plan caps: its period cap and model caps on the team's sum, each limit on the
 * sum or on each member (its scope); undefined without a plan, or until the plans are read.
 */
function useTeamCaps(planName: string | null): string[] | undefined {
  const plans = useQuery(plansRead());
  const plan = planName === null ? undefined : plans.data?.plans.find((x) => x.name === planName);
  if (!plan) return undefined;
  return [
    ...(plan.max_spend_per_period == null ? [] : [`${fmtMoney(plan.max_spend_per_period)} a billing period for the team`]),
    ...Object.entries(plan.model_limits).map(([m, l]) => `${fmtInt(l.max_tokens_per_period)} ${m} tokens a billing period for the team`),
    ...plan.limits.map((l) => `${l.name}: ${describeLimit(l)} ${l.scope === "member" ? "for each member" : "for the team"}`),
  ];
}

function CapList({ caps }: { caps: string[] }) {
  return (
    <ul className="plain">
      {caps.map((c) => (
        <li key={c}>{c}</li>
      ))}
    </ul>
  );
}

function useMembership() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: ({ user, team }: { user: string; team: string | null }) =>
      ok(api.PUT("/api/v1/users/{user_id}/team", { params: { path: { user_id: user } }, body: { team_id: team } })),
    onSuccess: (_, { user }) => {
      for (const k of ["team", "teams", "team-members", "team-member-sessions"]) queryClient.invalidateQueries({ queryKey: [k] });
      queryClient.invalidateQueries({ queryKey: ["user", user] });
    },
  });
}

/** Members' sessions read at once at most (one request each: no route gives a page of members' spend). */
const SESSION_REQUESTS = 6;

/**
 * The page of members shown (paging kept in the URL) and each one's session: its spend in its
 * billing period and its dimensions, among them the team plan's member-scope ones (this member's use).
 */
function useMembers(id: string) {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set, "mcursor");
  const page = useQuery({
    queryKey: ["team-members", id, paging.cursor],
    queryFn: () => ok(api.GET("/api/v1/teams/{team_id}/members", { params: { ...p(id), query: { cursor: paging.cursor, limit: 50 } } })),
  });
  const ids = page.data?.members.map((u) => u.external_user_id) ?? [];
  const sessions = useQuery({
    queryKey: ["team-member-sessions", id, ids],
    queryFn: async () => {
      const all = await mapLimited(ids, SESSION_REQUESTS, (u) => ok(api.GET("/api/v1/users/{user_id}/session", { params: { path: { user_id: u } } })));
      return new Map(all.map((s) => [s.user_id, s]));
    },
    enabled: ids.length > 0,
  });
  return { paging, page, sessions };
}

/** A member's dimensions that a member-scope limit of the team plan gives it. */
const memberDims = (s: Session | undefined) => ((s?.limits ?? []) as Dimension[]).filter((d) => d.scope === "member");

/**
 * The team's dimensions (GET /teams/{team_id}/limits: the team's sums) as bars with their resets;
 * then each member-scope limit as the bar of the member nearest its cap among the members shown.
 */
function TeamLimits({ id, hasPlan, members }: { id: string; hasPlan: boolean; members: Map<string, Session> | undefined }) {
  const limits = useQuery({ queryKey: ["team-limits", id], queryFn: () => getTeamLimits(id), refetchInterval: untilResetRefetch });
  const now = useNow(30_000);
  const nearest = new Map<string, { user: string; d: Dimension }>();
  for (const [user, s] of members ?? []) {
    for (const d of memberDims(s)) {
      const top = nearest.get(d.reason);
      if (!top || d.pct > top.d.pct) nearest.set(d.reason, { user, d });
    }
  }
  return (
    <Query q={limits} label="Loading the team's limits">
      {({ limits: dims }) => {
        const blocking = blockingIndex(dims);
        const block = dims[blocking];
        if (!hasPlan || (dims.length === 0 && nearest.size === 0))
          return <p className="muted">{hasPlan ? "The team's plan has no caps or limits." : "No plan in force: subscribe the team to a plan to give it caps."}</p>;
        return (
          <div className="gauges">
            {block ? (
              <p className="blocking-summary bad">
                Every member's calls are blocked by {dimensionLabel(block)} ({block.reason}): <Reset d={block} now={now} />.
              </p>
            ) : (
              dims.length > 0 && <p className="muted blocking-summary">No team limit blocks calls.</p>
            )}
            {dims.map((d, i) => (
              <DimensionBar key={d.reason} d={d} now={now} blocking={i === blocking} />
            ))}
            {[...nearest.values()].map(({ user, d }) => (
              <DimensionBar key={d.reason} d={d} now={now} label={`${dimensionLabel(d)}, nearest its cap: ${user}`} note="Counted for each member apart; each member's figure is in Members." />
            ))}
          </div>
        );
      }}
    </Query>
  );
}

function Members({ id, members }: { id: string; members: ReturnType<typeof useMembers> }) {
  const { paging, page: pageQuery, sessions } = members;
  const perMember = [...new Map([...(sessions.data?.values() ?? [])].flatMap((s) => memberDims(s)).map((d) => [d.reason, d])).values()];
  const spend = (u: User) => {
    const s = sessions.data?.get(u.external_user_id);
    return s ? fmtMoney(s.current_usage.period_cost) : sessions.isError ? "—" : "…";
  };
  const use = (u: User, reason: string) => {
    const d = memberDims(sessions.data?.get(u.external_user_id)).find((x) => x.reason === reason);
    return d ? `${fmtMetric(d.metric)(d.used)} of ${fmtMetric(d.metric)(d.max ?? 0)}` : "—";
  };
  const remove = useMembership();
  return (
    <Card title="Members">
      <ListQuery q={pageQuery} label="Loading members" items={(page) => page.members} empty="No members yet. Add a user below, or let your product call PUT /users/{user_id}/team.">
        {(list, page) => (
          <>
          <DataTable
            caption="Members"
            columns={["User", num("Spend this period"), ...perMember.map((d) => num(`${d.name ?? d.reason} (per member)`)), "Name", "Own plan", { label: "Actions", hidden: true }]}
            paging={paging}
            next={page.next_cursor}
          >
            {list.map((u) => (
              <tr key={u.id}>
                <td>
                  <Link href={userHref(u.external_user_id)}>{u.external_user_id}</Link>
                </td>
                <td className="num">{spend(u)}</td>
                {perMember.map((d) => (
                  <td key={d.reason} className="num">
                    {use(u, d.reason)}
                  </td>
                ))}
                <td>{u.name ?? "—"}</td>
                <td>{u.plan_name ?? <span className="muted">none (the team's plan alone)</span>}</td>
                <td>
                  <button
                    type="button"
                    className="secondary"
                    disabled={remove.isPending}
                    aria-label={`Remove ${u.external_user_id} from the team`}
                    onClick={() => remove.mutate({ user: u.external_user_id, team: null })}
                  >
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </DataTable>
          <p className="hint">Spend this period: each member's own spend in its own billing period (a calendar month without a plan of its own), including any before it joined the team.</p>
          </>
        )}
      </ListQuery>
      {remove.error && <FormAlert>{remove.error.message}</FormAlert>}
    </Card>
  );
}

function AddMember({ id }: { id: string }) {
  const [user, setUser] = useState("");
  const add = useMembership();
  const err = add.error instanceof ApiError ? add.error : null;
  return (
    <Card title="Add a member">
      <p className="hint">A user belongs to at most one team: adding a member of another team moves it here. Its usage before stays with the team it was counted for.</p>
      <InlineForm button="Add member" onSubmit={() => user.trim() && add.mutate({ user: user.trim(), team: id }, { onSuccess: () => setUser("") })}>
        <Field label="External user id">
          {(fid) => <input id={fid} value={user} onChange={(e) => setUser(e.target.value)} placeholder="e.g. alice" required />}
        </Field>
      </InlineForm>
      {err && <FormAlert>{err.status === 404 ? `${err.message}. Create the user first (Users).` : err.message}</FormAlert>}
    </Card>
  );
}
