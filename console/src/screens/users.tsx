import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useLocation } from "wouter";
import { ApiError, api, ok, type Issue } from "../api/client.ts";
import { plansRead, usersFilter, usersRead } from "../api/reads.ts";
import { Card, DataTable, Empty, Field, FormAlert, InlineForm, num, Query, QuickStart, Screen, Submit, submitted, Time } from "../components.tsx";
import { fmtDate, fmtInt, fmtMoney, fmtTokens, utcTitle } from "../format.ts";
import { usePaging, useUrlState } from "../url-state.ts";

export function UsersScreen() {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set);
  const filter = usersFilter(params);
  const { prefix, plan } = filter;
  const [search, setSearch] = useState(prefix);
  const plans = useQuery(plansRead());
  const users = useQuery(usersRead(filter));

  return (
    <Screen title="Users">
    <div className="grid-side">
      <Card title="All users">
        <div className="filters" role="search" aria-label="Filter users">
          <InlineForm button="Search" onSubmit={() => set({ prefix: search.trim() || null, ...paging.reset })}>
            <Field label="User id starts with">
              {(id) => <input id={id} type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="e.g. alice" />}
            </Field>
          </InlineForm>
          <Field label="Plan">
            {(id) => (
              <select id={id} value={plan} onChange={(e) => set({ plan: e.target.value || null, ...paging.reset })}>
                <option value="">Any plan</option>
                {plans.data?.plans.map((p) => (
                  <option key={p.id} value={p.name}>
                    {p.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <Query q={users} label="Loading users">
          {(page) =>
            page.users.length === 0 ? (
              <Empty>
                {prefix || plan ? "No user matches these filters." : "No users yet. Create one here, or let your product register users with POST /users; see the "}
                {!(prefix || plan) && <QuickStart />}
              </Empty>
            ) : (
              <DataTable caption="Users" columns={["User", "Name", "Plan", num("Period spend"), num("Period tokens"), "Period", "Created"]} paging={paging} next={page.next_cursor}>
                {page.users.map((u) => (
                  <tr key={u.id}>
                    <td>
                      <Link href={`/users/${encodeURIComponent(u.external_user_id)}`}>{u.external_user_id}</Link>
                    </td>
                    <td>{u.name ?? "—"}</td>
                    <td>{u.plan_name ?? <span className="muted">no plan</span>}</td>
                    <td className="num">{fmtMoney(u.period_spend_usd)}</td>
                    <td className="num" title={fmtInt(u.period_tokens)}>{fmtTokens(u.period_tokens)}</td>
                    <td>
                      <time dateTime={u.period_start} title={utcTitle(u.period_start)}>{fmtDate(u.period_start)}</time> –{" "}
                      <time dateTime={u.period_end} title={utcTitle(u.period_end)}>{fmtDate(u.period_end)}</time>
                    </td>
                    <td>
                      <Time iso={u.created_at} />
                    </td>
                  </tr>
                ))}
              </DataTable>
            )
          }
        </Query>
      </Card>
      <CreateUser />
    </div>
    </Screen>
  );
}

function CreateUser() {
  const [form, setForm] = useState({ external_user_id: "", name: "" });
  const [issues, setIssues] = useState<Issue[]>([]);
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/users", { body: { external_user_id: form.external_user_id, name: form.name || null } })),
    onMutate: () => setIssues([]),
    onError: (e) => e instanceof ApiError && setIssues(e.issues),
    onSuccess: (u) => {
      queryClient.invalidateQueries({ queryKey: ["users"] });
      navigate(`/users/${encodeURIComponent(u.external_user_id)}`);
    },
  });
  const submit = submitted(() => {
    create.mutate();
  });
  const issue = (f: string) => issues.find((i) => i.path === `/${f}`)?.message;
  return (
    <Card title="Create a user">
      <form onSubmit={submit} className="stack" aria-label="Create a user">
        <Field label="External user id" error={issue("external_user_id")} hint="Your product's own id for the user (1-255 characters).">
          {(id, d) => <input id={id} aria-describedby={d} value={form.external_user_id} onChange={(e) => setForm({ ...form, external_user_id: e.target.value })} required />}
        </Field>
        <Field label="Display name (optional)" error={issue("name")}>
          {(id, d) => <input id={id} aria-describedby={d} value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />}
        </Field>
        {create.error && !issues.length && <FormAlert>{create.error instanceof ApiError && create.error.status === 409 ? "A user with this id exists already." : create.error.message}</FormAlert>}
        <Submit busy={create.isPending} busyLabel="Creating…">
          Create user
        </Submit>
      </form>
    </Card>
  );
}
