import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useLocation } from "wouter";
import { ApiError, api, ok, type Issue } from "../api/client.ts";
import { Card, DataTable, Empty, Field, FormAlert, InlineForm, num, Query, Screen, Submit, submitted, Time } from "../components.tsx";
import { fmtInt } from "../format.ts";
import { usePaging, useUrlState } from "../url-state.ts";

export const teamHref = (teamId: string) => `/teams/${encodeURIComponent(teamId)}`;

/** GET /teams (listTeams): prefix search and cursor paging, kept in the URL. */
export function TeamsScreen() {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set);
  const prefix = params.get("prefix") ?? "";
  const [search, setSearch] = useState(prefix);
  const teams = useQuery({
    queryKey: ["teams", prefix, paging.cursor],
    queryFn: () => ok(api.GET("/api/v1/teams", { params: { query: { prefix: prefix || undefined, cursor: paging.cursor, limit: 50 } } })),
  });
  return (
    <Screen title="Teams">
      <div className="grid-side">
        <Card title="All teams">
          <div className="filters" role="search" aria-label="Filter teams">
            <InlineForm button="Search" onSubmit={() => set({ prefix: search.trim() || null, ...paging.reset })}>
              <Field label="Team id starts with">
                {(id) => <input id={id} type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="e.g. acme" />}
              </Field>
            </InlineForm>
          </div>
          <Query q={teams} label="Loading teams">
            {(page) =>
              page.teams.length === 0 ? (
                <Empty>
                  {prefix
                    ? "No team matches this search."
                    : "No teams yet. A team shares one budget among several users (an organisation, a workspace): create one here or with POST /teams."}
                </Empty>
              ) : (
                <DataTable caption="Teams" columns={["Team", "Name", "Plan", num("Members"), "Created"]} paging={paging} next={page.next_cursor}>
                  {page.teams.map((t) => (
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
              )
            }
          </Query>
        </Card>
        <CreateTeam />
      </div>
    </Screen>
  );
}

function CreateTeam() {
  const [form, setForm] = useState({ external_team_id: "", name: "" });
  const [issues, setIssues] = useState<Issue[]>([]);
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/teams", { body: form })),
    onMutate: () => setIssues([]),
    onError: (e) => e instanceof ApiError && setIssues(e.issues),
    onSuccess: (t) => {
      queryClient.invalidateQueries({ queryKey: ["teams"] });
      navigate(teamHref(t.team_id));
    },
  });
  const issue = (f: string) => issues.find((i) => i.path === `/${f}`)?.message;
  return (
    <Card title="Create a team">
      <form onSubmit={submitted(() => create.mutate())} className="stack" aria-label="Create a team">
        <Field label="External team id" error={issue("external_team_id")} hint="Your product's own id for the team (1-255 characters).">
          {(id, d) => <input id={id} aria-describedby={d} value={form.external_team_id} onChange={(e) => setForm({ ...form, external_team_id: e.target.value })} required />}
        </Field>
        <Field label="Name" error={issue("name")}>
          {(id, d) => <input id={id} aria-describedby={d} value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required />}
        </Field>
        {create.error && !issues.length && <FormAlert>{create.error instanceof ApiError && create.error.status === 409 ? "A team with this id exists already." : create.error.message}</FormAlert>}
        <Submit busy={create.isPending} busyLabel="Creating…">
          Create team
        </Submit>
      </form>
    </Card>
  );
}
