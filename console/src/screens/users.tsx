import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { api, ok } from "../api/client.ts";
import { plansRead, usersFilter, usersRead } from "../api/reads.ts";
import { Card, DataTable, Field, ListQuery, num, Options, PrefixSearch, QuickStart, Screen, Time } from "../components.tsx";
import { fmtDate, fmtExactMoney, fmtInt, fmtTokens, utcTitle } from "../format.ts";
import { usePaging, useUrlState } from "../url-state.ts";
import { CreateForm } from "./create-form.tsx";

export function UsersScreen() {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set);
  const filter = usersFilter(params);
  const { prefix, plan } = filter;
  const plans = useQuery(plansRead());
  const users = useQuery(usersRead(filter));

  return (
    <Screen title="Users">
    <div className="grid-side">
      <Card title="All users">
        <div className="filters" role="search" aria-label="Filter users">
          <PrefixSearch label="User id starts with" placeholder="e.g. alice" prefix={prefix} onSearch={(p) => set({ prefix: p, ...paging.reset })} />
          <Field label="Plan">
            {(id) => (
              <select id={id} value={plan} onChange={(e) => set({ plan: e.target.value || null, ...paging.reset })}>
                <option value="">Any plan</option>
                <Options values={plans.data?.plans.map((p) => p.name) ?? []} />
              </select>
            )}
          </Field>
        </div>
        <ListQuery q={users} label="Loading users" items={(page) => page.users} pages={{ paging, next: (page) => page.next_cursor }} empty={prefix || plan ? "No user matches these filters." : <>No users yet. Create one here, or let your product register users with POST /users; see the <QuickStart /></>}>
          {(list, page) => (
            <DataTable caption="Users" columns={["User", "Name", "Plan", num("Period spend"), num("Period tokens"), "Period", "Created"]} paging={paging} next={page.next_cursor}>
              {list.map((u) => (
                <tr key={u.id}>
                  <td>
                    <Link href={`/users/${encodeURIComponent(u.external_user_id)}`}>{u.external_user_id}</Link>
                  </td>
                  <td>{u.name ?? "—"}</td>
                  <td>{u.plan_name ?? <span className="muted">no plan</span>}</td>
                  <td className="num">{fmtExactMoney(u.period_spend_usd)}</td>
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
          )}
        </ListQuery>
      </Card>
      <CreateForm
        noun="user"
        nameLabel="Display name (optional)"
        create={(external_user_id, name) => ok(api.POST("/api/v1/users", { body: { external_user_id, name: name || null } }))}
        list="users"
        href={(u) => `/users/${encodeURIComponent(u.external_user_id)}`}
      />
    </div>
    </Screen>
  );
}
