import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "wouter";
import { ApiError, api, getTeamLimits, mapLimited, ok, type Session, type Team, type User } from "../api/client.ts";
import { plansRead, teamUsageRead } from "../api/reads.ts";
import { Card, ConfirmBox, DataTable, DoneStatus, Facts, Field, FormAlert, FormStatus, InlineForm, ListQuery, num, Period, Query, Screen, Time } from "../components.tsx";
import { creditCapNote, drawsCredits } from "../credits.ts";
import { DimensionBar, Reset, untilResetRefetch, useNow } from "../dimension-bars.tsx";
import { usePaging, useUrlState } from "../url-state.ts";
import { fmtExactMoney, fmtInt } from "../format.ts";
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
  const limits = useQuery(teamLimitsQuery(id));
  const plans = useQuery(plansRead());
  const period = teamPeriod(id, members.sessions.data, limits.data?.limits);
  // Whether everything that could show the period has answered (the page shows "…" until then).
  const shown = members.page.data?.members.length;
  const periodSettled = limits.data !== undefined && (shown === 0 || members.sessions.data !== undefined || members.sessions.isError);
  return (
    <Screen title={id} crumbs={<Link href="/teams">Teams</Link>}>
      <Query q={team} label="Loading team">
        {(t) => (
          <>
            <div className="grid-2">
              <TeamPlan team={t} period={period} settled={periodSettled} />
              <Card title="Usage against the team's limits" className="team-limits">
                <TeamLimits id={id} hasPlan={t.plan_name !== null} members={members.sessions.data} allowance={plans.data?.plans.find((x) => x.name === t.plan_name)?.max_spend_per_period} />
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
                current={{
                  // The team answers its plan's name; plan names are unique within a product.
                  plan_id: period?.plan_id ?? plans.data?.plans.find((x) => x.name === t.plan_name)?.id ?? null,
                  period: period && { start: period.start, end: period.end },
                  billing_subscription_id: t.billing_subscription_id,
                }}
                periodNote={t.plan_name !== null && periodSettled ? TEAM_PERIOD_UNKNOWN : undefined}
                save={(body) => ok(api.POST("/api/v1/teams/{team_id}/subscription", { params: p(id), body }))}
                onSaved={() => {
                  for (const k of ["team", "teams", "team-limits", "team-usage", "team-member-sessions", "plan-subscribers"]) queryClient.invalidateQueries({ queryKey: [k] });
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
  // Unknown once the plans failed to load (or name no such plan): the whole card, as for a plan that draws.
  const draws = planName === null ? "no plan" : plan ? drawsCredits(plan) : plans.isPending ? undefined : true;
  return <UserCredits kind="team" id={id} draws={draws} />;
}

/** Why a team's page may not show its period, and what the form's dates then are. */
const TEAM_PERIOD_UNKNOWN =
  "No route answers a team's billing period: it is read from a member's session, or from a limit of the team plan counted per billing period. With neither, the dates above are this calendar month (UTC).";

/** The team's dimensions, read once by the page (the bars, and the period when no member shows it). */
const teamLimitsQuery = (id: string) => ({ queryKey: ["team-limits", id], queryFn: () => getTeamLimits(id), refetchInterval: untilResetRefetch });

/**
 * The team's billing period in force and its plan's id, from what the API offers (GET
 * /teams/{team_id} says neither): a member's session (its `team` block), else a team dimension
 * counted per billing period (its window_start and resets_at are the period's bounds; a cap of 0
 * has no resets_at). Null when neither is there.
 */
function teamPeriod(id: string, sessions: Map<string, Session> | undefined, dims: readonly Dimension[] | undefined): { start: string; end: string; plan_id?: string } | null {
  for (const s of sessions?.values() ?? []) if (s.team?.team_id === id) return { ...s.team.billing_period, plan_id: s.team.plan_id };
  const d = dims?.find((x) => x.window === "period" && x.window_start && x.resets_at);
  return d ? { start: d.window_start!, end: d.resets_at! } : null;
}

/** `settled`: every read that could show the period (teamPeriod) has answered. */
function TeamPlan({ team, period, settled }: { team: Team; period: { start: string; end: string } | null; settled: boolean }) {
  const caps = useTeamCaps(team.plan_name);
  return (
    <Card title="Plan">
      <Facts
        facts={[
          ["Name", team.name],
          ["Plan", team.plan_name ?? "no plan (members are held by their own plans only)"],
          caps && ["Caps", caps.length === 0 ? "none" : <CapList caps={caps} />],
          team.plan_name !== null && ["Billing period", period ? <Period {...period} /> : settled ? <span className="muted">not known: no member's session nor any limit of the plan counted per billing period shows it</span> : "…"],
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
    ...(plan.max_spend_per_period == null ? [] : [`${fmtExactMoney(plan.max_spend_per_period)} a billing period for the team`]),
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
function TeamLimits({ id, hasPlan, members, allowance }: { id: string; hasPlan: boolean; members: Map<string, Session> | undefined; allowance: number | null | undefined }) {
  const limits = useQuery(teamLimitsQuery(id));
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
              <DimensionBar key={d.reason} d={d} now={now} blocking={i === blocking} note={creditCapNote(d, dims, { team: allowance })} />
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
    return s ? fmtExactMoney(s.current_usage.period_cost) : sessions.isError ? "—" : "…";
  };
  const use = (u: User, reason: string) => {
    const d = memberDims(sessions.data?.get(u.external_user_id)).find((x) => x.reason === reason);
    return d ? `${fmtMetric(d.metric)(d.used)} of ${fmtMetric(d.metric)(d.max ?? 0)}` : "—";
  };
  const remove = useMembership();
  // A removal is asked first: the member leaves the team's budget (and its pool) at once.
  const [removing, setRemoving] = useState<User | null>(null);
  const [removed, setRemoved] = useState<string | null>(null);
  return (
    <Card title="Members">
      {removing && (
        <ConfirmBox
          key={removing.external_user_id}
          name="Confirm the removal"
          yes="Yes, remove"
          busyYes="Removing…"
          busy={remove.isPending}
          no="Keep it"
          onNo={() => setRemoving(null)}
          onYes={() =>
            remove.mutate(
              { user: removing.external_user_id, team: null },
              {
                onSuccess: () => {
                  setRemoving(null);
                  setRemoved(removing.external_user_id);
                },
              },
            )
          }
        >
          Remove <strong>{removing.external_user_id}</strong> from team <strong>{id}</strong>? Its usage from now on no longer counts for the team (what it used so far stays with the team), and its calls are then held by{" "}
          {removing.plan_name ? `its own plan (${removing.plan_name}) only` : "no plan: it has none of its own, so every call passes"}.
        </ConfirmBox>
      )}
      {removed && !removing && <DoneStatus key={removed}>{removed} is no longer a member of {id}.</DoneStatus>}
      <ListQuery q={pageQuery} label="Loading members" items={(page) => page.members} pages={{ paging, next: (page) => page.next_cursor }} empty="No members yet. Add a user below, or let your product call PUT /users/{user_id}/team.">
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
                    onClick={() => {
                      remove.reset();
                      setRemoved(null);
                      setRemoving(u);
                    }}
                  >
                    Remove…
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
  const [user, setUserText] = useState("");
  // A member of another team is moved here: asked first, naming the team it leaves.
  const [moving, setMoving] = useState<{ user: string; from: string } | null>(null);
  const [lookup, setLookup] = useState<ApiError | null>(null);
  const add = useMembership();
  const setUser = (text: string) => {
    setMoving(null);
    setUserText(text);
  };
  const [added, setAdded] = useState<string | null>(null);
  const send = (who: string) => {
    setAdded(null);
    add.mutate({ user: who, team: id }, { onSuccess: () => (setUser(""), setAdded(who)) });
  };
  const submit = async () => {
    const who = user.trim();
    if (!who) return;
    if (moving?.user === who) return send(who);
    setLookup(null);
    add.reset();
    let current: string | null;
    try {
      current = (await ok(api.GET("/api/v1/users/{user_id}", { params: { path: { user_id: who } } }))).team_id;
    } catch (e) {
      return setLookup(e instanceof ApiError ? e : new ApiError(0, String(e)));
    }
    if (current !== null && current !== id) return setMoving({ user: who, from: current });
    send(who);
  };
  const err = lookup ?? (add.error instanceof ApiError ? add.error : null);
  return (
    <Card title="Add a member">
      <p className="hint">A user belongs to at most one team: adding a member of another team moves it here. Its usage before stays with the team it was counted for.</p>
      <InlineForm button={moving ? "Yes, move it here" : "Add member"} onSubmit={submit}>
        <Field label="External user id">
          {(fid) => <input id={fid} value={user} onChange={(e) => setUser(e.target.value)} placeholder="e.g. alice" required />}
        </Field>
      </InlineForm>
      {added && !moving && <FormStatus>{added} is a member of {id} now.</FormStatus>}
      {moving && (
        <p role="status" className="warning">
          {moving.user} is a member of team {moving.from}: adding it moves it here (its usage so far stays with {moving.from}).{" "}
          <button type="button" className="secondary small" onClick={() => setMoving(null)}>
            Keep it there
          </button>
        </p>
      )}
      {err && <FormAlert>{err.status === 404 ? `${err.message}. Create the user first (Users).` : err.message}</FormAlert>}
    </Card>
  );
}
