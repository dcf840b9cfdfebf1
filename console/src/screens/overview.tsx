import { useMemo, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { ApiError } from "../api/client.ts";
import { overviewReads, overviewWindow, type Source } from "../api/reads.ts";
import { BarList, Card, DataTable, DayChart, Empty, ErrorState, Field, InlineForm, ListQuery, num, Query, QuickStart, Screen } from "../components.tsx";
import { change, fmtExactMoney, fmtInt, fmtPct, fmtSubscribers, fmtTokens } from "../format.ts";
import { useUrlState } from "../url-state.ts";
import { modelLabel } from "../usage-rows.ts";

export function Overview() {
  const [params, set] = useUrlState();
  const shown = overviewWindow(params);
  const { days, source, team } = shown;
  const reads = overviewReads(shown);
  const summary = useQuery(reads.summary);
  const series = useQuery(reads.series);
  const gates = useQuery(reads.gates);
  const breakdown = useQuery(reads.breakdown);
  const top = useQuery(reads.top);
  const topTeams = useQuery(reads.topTeams);
  const plans = useQuery(reads.plans);
  // A team filter that names no team: said once, not by every card, whichever card's read answers first.
  const unknownTeam = team ? [summary, series, gates, breakdown, top, topTeams].map((q) => q.error).find((e) => e instanceof ApiError && e.status === 404) : undefined;
  if (unknownTeam)
    return (
      <Screen title="Overview" actions={<WindowPicker days={days} source={source} team={team} onChange={(p) => set(p)} />}>
        <ErrorState error={unknownTeam} />
        <p className="hint">
          No team {team} in this product: <Link href="/">show every team</Link>, or pick one from <Link href="/teams">Teams</Link>.
        </p>
      </Screen>
    );

  return (
    <Screen title="Overview" actions={<WindowPicker days={days} source={source} team={team} onChange={(p) => set(p)} />}>
    {team && (
      <p className="hint">
        Only usage of team <Link href={`/teams/${encodeURIComponent(team)}`}>{team}</Link>: each event counts for the team its user was in at the event's time.
      </p>
    )}
    <Query q={summary} label="Loading totals">
      {(s) => (
        <div className="cards" aria-label="Summary">
          <Stat label="Cost" value={fmtExactMoney(s.total_cost)} delta={change(s.total_cost, s.previous_period.total_cost)} />
          <Stat label="Tokens" value={fmtTokens(s.total_tokens)} title={fmtInt(s.total_tokens)} delta={change(s.total_tokens, s.previous_period.total_tokens)} />
          <Stat label="Events" value={fmtInt(s.total_events)} delta={change(s.total_events, s.previous_period.total_events)} />
          <Stat label="Active users" value={fmtInt(s.active_users)} delta={change(s.active_users, s.previous_period.active_users)} />
        </div>
      )}
    </Query>

    <div className="grid-3">
      <Query q={series} label="Loading daily usage">
        {(t) => <DailyUsage data={t.data} />}
      </Query>
    </div>

    <div className="grid-2">
      {/* A gate is a call's (the client library's), never a manual event's: the source filter cannot narrow it. */}
      <Card title={source ? "Gates per day (every source)" : "Gates per day"}>
        <Query q={gates} label="Loading gates">
          {(g) =>
            g.data.every((d) => d.soft_gates + d.hard_gates === 0) ? (
              <Empty>No soft or hard gates in this window. Users reach gates at their plan's soft_gate_at and hard_gate_at.</Empty>
            ) : (
              <GatesChart data={g.data} />
            )
          }
        </Query>
      </Card>
      <Card title={team ? "Plan distribution (all users)" : "Plan distribution"}>
        <ListQuery q={plans} label="Loading plans" items={(p) => p.plans} empty={<>No plans yet. <Link href="/plans">Create a plan</Link>, then subscribe users to it.</>}>
          {(list) => <BarList title="Subscribers per plan" rows={list.map((r) => ({ label: r.plan_name, value: r.subscriber_count + r.team_subscriber_count, text: fmtSubscribers(r.subscriber_count, r.team_subscriber_count) }))} />}
        </ListQuery>
      </Card>
    </div>

    <div className="grid-2">
      <Card title="Models">
        <ListQuery q={breakdown} label="Loading models" items={(b) => b.models} empty={<>No model usage in this window. Send usage events with the client library or the API; see the <QuickStart />.</>}>
          {(models) => (
            <>
              <BarList title="Cost per model" rows={models.map((m) => ({ label: modelLabel(m.model), value: m.cost, text: fmtExactMoney(m.cost) }))} />
              <DataTable caption="Cost and tokens per model" columns={["Model", num("Cost"), num("Tokens"), num("Share")]}>
                {models.map((m) => (
                  <tr key={m.model}>
                    <td>{modelLabel(m.model)}</td>
                    <td className="num">{fmtExactMoney(m.cost)}</td>
                    <td className="num" title={fmtInt(m.tokens)}>{fmtTokens(m.tokens)}</td>
                    <td className="num">{fmtPct(m.pct / 100)}</td>
                  </tr>
                ))}
              </DataTable>
            </>
          )}
        </ListQuery>
      </Card>
      <Card title={team ? "Top users in the team" : "Top users"}>
        <ListQuery q={top} label="Loading top users" items={(t) => t.users} empty={<>No user spent anything in this window. <Link href="/users">Add users</Link> and send usage; see the <QuickStart />.</>}>
          {(users) => <TopSpenders caption="Users with the highest cost" column="User" path="/users" rows={users.map((u) => ({ ...u, id: u.user_id }))} />}
        </ListQuery>
      </Card>
    </div>

    <div className="grid-2">
      <Card title="Top teams">
        <ListQuery q={topTeams} label="Loading top teams" items={(t) => t.teams} empty={<>No team spent anything in this window. <Link href="/teams">Create teams</Link> and add users to them; their usage counts for their team from then on.</>}>
          {(teams) => <TopSpenders caption="Teams with the highest cost" column="Team" path="/teams" rows={teams.map((x) => ({ ...x, id: x.team_id }))} />}
        </ListQuery>
      </Card>
    </div>
    </Screen>
  );
}

/** The users or teams that spent most in the window, each linked to its page under `path`. */
function TopSpenders({ caption, column, path, rows }: { caption: string; column: string; path: string; rows: { id: string; cost: number; tokens: number; events: number }[] }) {
  return (
    <DataTable caption={caption} columns={[column, num("Cost"), num("Tokens"), num("Events")]}>
      {rows.map((r) => (
        <tr key={r.id}>
          <td>
            <Link href={`${path}/${encodeURIComponent(r.id)}`}>{r.id}</Link>
          </td>
          <td className="num">{fmtExactMoney(r.cost)}</td>
          <td className="num" title={fmtInt(r.tokens)}>{fmtTokens(r.tokens)}</td>
          <td className="num">{fmtInt(r.events)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

function Stat({ label, value, delta, title }: { label: string; value: string; title?: string; delta: { text: string; direction: string } }) {
  return (
    <section className="card stat" aria-label={label}>
      <h2>{label}</h2>
      <p className="stat-value" title={title}>
        {value}
      </p>
      <p className={`delta delta-${delta.direction}`}>{delta.text}</p>
    </section>
  );
}

/** The daily charts, one a measure. */
const DAILY = [
  { label: "Cost", key: "cost", format: (n: number) => fmtExactMoney(n) },
  { label: "Tokens", key: "tokens", color: "#7c3aed", format: (n: number) => fmtTokens(n) },
  { label: "Events", key: "events", color: "#059669", format: (n: number) => fmtTokens(n) },
] as const;

function DailyUsage({ data }: { data: { date: string; cost: number; tokens: number; events: number }[] }) {
  const dates = useMemo(() => data.map((d) => d.date), [data]);
  const charts = useMemo(() => DAILY.map(({ key, ...measure }) => ({ title: measure.label, series: [{ ...measure, values: data.map((d) => d[key]) }] })), [data]);
  return (
    <>
      {charts.map(({ title, series }) => (
        <Card key={title} title={`${title} per day`}>
          <DayChart title={title} dates={dates} series={series} />
        </Card>
      ))}
    </>
  );
}

function GatesChart({ data }: { data: { date: string; soft_gates: number; hard_gates: number }[] }) {
  const dates = useMemo(() => data.map((d) => d.date), [data]);
  const series = useMemo(
    () => [
      { label: "Soft gates", values: data.map((d) => d.soft_gates), color: "#d97706" },
      { label: "Hard gates", values: data.map((d) => d.hard_gates), color: "#dc2626" },
    ],
    [data],
  );
  return <DayChart stacked title="Soft and hard gates" dates={dates} series={series} />;
}

function WindowPicker({ days, source, team, onChange }: { days: number; source: Source; team: string | undefined; onChange: (p: Record<string, string | number | null>) => void }) {
  const preset = [7, 30, 90].includes(days);
  const [custom, setCustom] = useState(preset ? "" : String(days));
  const [daysProblem, setDaysProblem] = useState<string | undefined>();
  const [teamId, setTeamId] = useState(team ?? "");
  return (
    <div className="filters" role="group" aria-label="Window, source and team">
      <div className="segmented" role="group" aria-label="Window">
        {[7, 30, 90].map((d) => (
          <button key={d} type="button" className={days === d ? "on" : ""} aria-pressed={days === d} onClick={() => onChange({ days: d })}>
            {d} days
          </button>
        ))}
      </div>
      <InlineForm
        button="Apply"
        onSubmit={() => {
          const n = Number(custom);
          if (Number.isInteger(n) && n >= 1 && n <= 365) {
            setDaysProblem(undefined);
            onChange({ days: n });
          } else setDaysProblem("A whole number of days from 1 to 365.");
        }}
      >
        <Field label="Days" error={daysProblem}>
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              className="narrow"
              type="number"
              min={1}
              max={365}
              value={custom}
              placeholder={String(days)}
              onChange={(e) => {
                setCustom(e.target.value);
                setDaysProblem(undefined);
              }}
            />
          )}
        </Field>
      </InlineForm>
      <Field label="Source">
        {(id) => (
          <select id={id} value={source ?? ""} onChange={(e) => onChange({ source: e.target.value || null })}>
            <option value="">All</option>
            <option value="auto">Auto (instrumented)</option>
            <option value="manual">Manual</option>
          </select>
        )}
      </Field>
      <InlineForm button="Filter" onSubmit={() => onChange({ team: teamId.trim() || null })}>
        <Field label="Team">
          {(id) => <input id={id} value={teamId} placeholder="All teams" maxLength={255} onChange={(e) => setTeamId(e.target.value)} />}
        </Field>
      </InlineForm>
      {team && (
        <button
          type="button"
          className="secondary"
          onClick={() => {
            setTeamId("");
            onChange({ team: null });
          }}
        >
          All teams
        </button>
      )}
    </div>
  );
}
