import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { api, ok } from "../api/client.ts";
import { Card, DataTable, ListQuery, num, PrefixSearch, Screen, Time } from "../components.tsx";
import { fmtInt } from "../format.ts";
import { usePaging, useUrlState } from "../url-state.ts";
import { CreateForm } from "./create-form.tsx";

export const teamHref = (teamId: string) => `/teams/${encodeURIComponent(teamId)}`;

/** GET /teams (listTeams): prefix search and cursor paging, kept in the URL. */
export function TeamsScreen() {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set);
  const prefix = params.get("prefix") ?? "";
  const teams = useQuery({
    queryKey: ["teams", prefix, paging.cursor],
    queryFn: () => ok(api.GET("/api/v1/teams", { params: { query: { prefix: prefix || undefined, cursor: paging.cursor, limit: 50 } } })),
  });
  return (
    <Screen title="Teams">
      <div className="grid-side">
        <Card title="All teams">
          <div className="filters" role="search" aria-label="Filter teams">
            <PrefixSearch label="Team id starts with" placeholder="e.g. acme" prefix={prefix} onSearch={(p) => set({ prefix: p, ...paging.reset })} />
          </div>
          <ListQuery q={teams} label="Loading teams" items={(page) => page.teams} pages={{ paging, next: (page) => page.next_cursor }} empty={prefix ? "No team matches this search." : "No teams yet. A team shares one budget among several users (an organisation, a workspace): create one here or with POST /teams."}>
            {(list, page) => (
              <DataTable caption="Teams" columns={["Team", "Name", "Plan", num("Members"), "Created"]} paging={paging} next={page.next_cursor}>
                {list.map((t) => (
                  <tr key={t.service_team_id}>
                    <td>
                      <Link href={teamHref(t.team_id)}>{t.team_id}</Link>
                    </td>
                    <td>{t.name}</td>
                    <td>{t.plan_name ?? <span className="muted">no plan</span>}</td>
                    <td className="num">{fmtInt(t.member_count)}</td>
                    <td>
                      <Time iso={t.created_at} />
                    </td>
                  </tr>
                ))}
              </DataTable>
            )}
          </ListQuery>
        </Card>
        <CreateForm
          noun="team"
          nameLabel="Name"
          nameRequired
          create={(external_team_id, name) => ok(api.POST("/api/v1/teams", { body: { external_team_id, name } }))}
          list="teams"
          href={(t) => teamHref(t.team_id)}
        />
      </div>
    </Screen>
  );
}
