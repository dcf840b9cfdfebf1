import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "wouter";
import { ApiError, api, ok } from "../api/client.ts";
import { Card, DataTable, Empty, Field, FormAlert, InlineForm, Query, Time } from "../components.tsx";
import { usePaging, useUrlState } from "../url-state.ts";
import { fmtInt, fmtMoney } from "../format.ts";
import { describeLimit } from "../limits.ts";
import { SubscriptionForm } from "./subscription-form.tsx";

const p = (id: string) => ({ path: { team_id: id } });
const userHref = (userId: string) => `/users/${encodeURIComponent(userId)}`;

/** A team: its plan, its subscription, its members (BUDGETS.md §4). */
export function TeamScreen({ id }: { id: string }) {
  const team = useQuery({ queryKey: ["team", id], queryFn: () => ok(api.GET("/api/v1/teams/{team_id}", { params: p(id) })) });
  const queryClient = useQueryClient();
  return (
    <div className="screen">
      <div className="screen-head">
        <div>
          <p className="crumbs">
            <Link href="/teams">Teams</Link> /
          </p>
          <h1>{id}</h1>
        </div>
      </div>
      <Query q={team} label="Loading team">
        {(t) => (
          <>
            <div className="grid-2">
              <Card title="Plan">
                <dl className="facts">
                  <dt>Name</dt>
                  <dd>{t.name}</dd>
                  <dt>Plan</dt>
                  <dd>{t.plan_name ?? "no plan (members are held by their own plans only)"}</dd>
                  {t.plan_name !== null && <TeamCaps planName={t.plan_name} />}
                  <dt>Billing subscription</dt>
                  <dd>{t.billing_subscription_id ?? "—"}</dd>
                  <dt>Members</dt>
                  <dd>{t.member_count}</dd>
                  <dt>Created</dt>
                  <dd>
                    <Time iso={t.created_at} />
                  </dd>
                </dl>
              </Card>
              {/* The team's dimensions as bars (its spend against the team plan's caps) come with team counting. */}
              <Card title="Usage against the team's limits" className="team-limits">
                <p className="muted">
                  The team's spend against its plan's caps and limits shows here once usage is counted for teams. Each member's page shows the member's own limits.
                </p>
              </Card>
            </div>
            <Members id={id} />
            <div className="grid-2">
              <SubscriptionForm
                current={undefined}
                save={(body) => ok(api.POST("/api/v1/teams/{team_id}/subscription", { params: p(id), body }))}
                onSaved={() => {
                  for (const k of ["team", "teams"]) queryClient.invalidateQueries({ queryKey: [k] });
                }}
              />
              <AddMember id={id} />
            </div>
          </>
        )}
      </Query>
    </div>
  );
}

/** What the team's plan caps: its period cap and model caps on the team's sum, each limit on the sum or on each member (its scope). */
function TeamCaps({ planName }: { planName: string }) {
  const plans = useQuery({ queryKey: ["plans"], queryFn: () => ok(api.GET("/api/v1/config/plans")) });
  const plan = plans.data?.plans.find((x) => x.name === planName);
  if (!plan) return null;
  const caps = [
    ...(plan.max_spend_per_period == null ? [] : [`${fmtMoney(plan.max_spend_per_period)} a billing period for the team`]),
    ...Object.entries(plan.model_limits).map(([m, l]) => `${fmtInt(l.max_tokens_per_period)} ${m} tokens a billing period for the team`),
    ...plan.limits.map((l) => `${l.name}: ${describeLimit(l)} ${l.scope === "member" ? "for each member" : "for the team"}`),
  ];
  return (
    <>
      <dt>Caps</dt>
      <dd>
        {caps.length === 0 ? (
          "none"
        ) : (
          <ul className="plain">
            {caps.map((c) => (
              <li key={c}>{c}</li>
            ))}
          </ul>
        )}
      </dd>
    </>
  );
}

function useMembership() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: ({ user, team }: { user: string; team: string | null }) =>
      ok(api.PUT("/api/v1/users/{user_id}/team", { params: { path: { user_id: user } }, body: { team_id: team } })),
    onSuccess: (_, { user }) => {
      for (const k of ["team", "teams", "team-members"]) queryClient.invalidateQueries({ queryKey: [k] });
      queryClient.invalidateQueries({ queryKey: ["user", user] });
    },
  });
}

function Members({ id }: { id: string }) {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set, "mcursor");
  const members = useQuery({
    queryKey: ["team-members", id, paging.cursor],
    queryFn: () => ok(api.GET("/api/v1/teams/{team_id}/members", { params: { ...p(id), query: { cursor: paging.cursor, limit: 50 } } })),
  });
  const remove = useMembership();
  return (
    <Card title="Members">
      <Query q={members} label="Loading members">
        {(page) =>
          page.members.length === 0 ? (
            <Empty>No members yet. Add a user below, or let your product call PUT /users/{"{user_id}"}/team.</Empty>
          ) : (
            <DataTable caption="Members" columns={["User", "Name", "Own plan", { label: "Actions", hidden: true }]} paging={paging} next={page.next_cursor}>
              {page.members.map((u) => (
                <tr key={u.id}>
                  <td>
                    <Link href={userHref(u.external_user_id)}>{u.external_user_id}</Link>
                  </td>
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
          )
        }
      </Query>
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
