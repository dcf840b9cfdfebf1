import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "wouter";
import { metricOfReason, price, rateOf, type Pricing } from "@meter/rules";
import { ApiError, api, ok, type GateEvent, type Session } from "../api/client.ts";
import { gateEventsFilter, gateEventsRead, lastSessionSpendRead, limitsRead, sessionRead, userRead, userUsageRead } from "../api/reads.ts";
import { Card, ConfirmBox, ConfirmedSubmit, DataTable, DoneStatus, ErrorState, Facts, Field, FormAlert, FormStatus, Gauge, InlineForm, ListQuery, num, PerPage, Period, Query, QuickStart, Screen, submitted, Time } from "../components.tsx";
import { useFieldIssues } from "../field-issues.ts";
import { newId } from "../ids.ts";
import { fmtExactMoney, fmtInt, fmtPct, fmtTime } from "../format.ts";
import { creditCapNote, drawsCredits } from "../credits.ts";
import { blockingIndex, dimensionLabel, TEAM_REASON } from "../limits.ts";
import { DimensionBar, Reset, untilResetRefetch, useNow } from "../dimension-bars.tsx";
import { usePaging, useUrlState } from "../url-state.ts";
import { UserCredits } from "./user-credits.tsx";
import { SubscriptionForm } from "./subscription-form.tsx";
import { UsageByModel } from "./usage-by-model.tsx";

const p = (id: string) => ({ path: { user_id: id } });

export function UserScreen({ id }: { id: string }) {
  const user = useQuery(userRead(id));
  const session = useQuery(sessionRead(id));
  // The other cards read beside the user (a screen waits for no chain of reads); a user that does
  // not exist shows its one not-found state, not one per card and forms that would fail.
  const missing = user.error instanceof ApiError && user.error.status === 404;
  return (
    <Screen title={id} crumbs={<Link href="/users">Users</Link>}>
      <Query q={user} label="Loading user">
        {(u) => (
          <div className="grid-2">
            <Card title="Plan and billing period">
              <Facts
                facts={[
                  ["Name", u.name ?? "—"],
                  ["Plan", u.plan_name ?? (u.team_id === null ? "no plan (every call passes)" : "no plan of its own (its team's plan applies)")],
                  ["Billing period", session.data ? <Period {...session.data.billing_period} /> : "…"],
                  ["Billing subscription", u.billing_subscription_id ?? "—"],
                  ["Team", u.team_id === null ? "—" : <Link href={`/teams/${encodeURIComponent(u.team_id)}`}>{u.team_id}</Link>],
                  session.data?.team && [
                    "Team's plan and period",
                    <>
                      {session.data.team.plan}: <Period {...session.data.team.billing_period} />
                    </>,
                  ],
                  ["Created", <Time iso={u.created_at} />],
                ]}
              />
            </Card>
            <Card title="Usage against limits">
              <Query q={session} label="Loading limits">
                {(s) => <Limits id={id} session={s} />}
              </Query>
            </Card>
          </div>
        )}
      </Query>
      {!missing && (
        <>
          <UserCredits id={id} draws={session.data ? drawsCredits(session.data.plan_id ? session.data.plan_config : null) : session.isPending ? undefined : true} />
          <UsageByModel
            read={(period) => userUsageRead(id, period)}
            empty={
              <>
                No usage in this period. Record a manual event below, or send usage from your product; see the <QuickStart />.
              </>
            }
          />
          <GateEvents id={id} />
          <div className="grid-2">
            <Subscription id={id} session={session.data} billing={user.data?.billing_subscription_id} />
            <ManualEvent id={id} pricing={session.data ? (session.data.plan_id ? session.data.plan_config : null) : undefined} />
          </div>
          <PortalTokens id={id} />
        </>
      )}
    </Screen>
  );
}

/** Every dimension of the user (GET /users/{user_id}/limits) as a bar with its reset; the one that blocks calls stands out. */
function Limits({ id, session }: { id: string; session: Session }) {
  const limits = useQuery({ ...limitsRead(id), refetchInterval: untilResetRefetch });
  const now = useNow(30_000);
  const c = session.plan_config;
  const lastSession = useQuery({ ...lastSessionSpendRead(id), enabled: c.max_spend_per_session != null });
  return (
    <Query q={limits} label="Loading limits">
      {({ limits: dims }) => {
        const blocking = blockingIndex(dims);
        const block = dims[blocking];
        // The service keeps no session spend (the client library does): the bar shows the last
        // session gate event's figure while its session can still run, else nothing spent.
        const lastGate = lastSession.data?.events[0];
        const sessionGate = lastGate && now - Date.parse(lastGate.timestamp) < c.session_timeout_minutes * 60_000 ? lastGate : undefined;
        return (
          <div className="gauges">
            {block ? (
              <p className="blocking-summary bad">
                Calls are blocked by {block.name ?? dimensionLabel(block)} ({block.reason}): <Reset d={block} now={now} />.
              </p>
            ) : (
              dims.length > 0 && <p className="muted blocking-summary">No limit blocks calls.</p>
            )}
            {!dims.some((d) => d.reason === "total_spend") && <Gauge label={session.team ? "Own period spend" : "Period spend"} value={session.current_usage.period_cost} limit={null} soft={c.soft_gate_at} hard={c.hard_gate_at} format={fmtExactMoney} />}
            {dims.map((d, i) => (
              <DimensionBar
                key={d.reason}
                d={d}
                now={now}
                value={d.reason === "session_spend" ? (sessionGate?.current_value ?? 0) : undefined}
                label={d.reason === "session_spend" ? `${dimensionLabel(d)} (${sessionGate ? `at its last gate event, ${fmtTime(sessionGate.timestamp)}` : "no gate event within a session's length"})` : undefined}
                note={creditCapNote(d, dims, { own: c.max_spend_per_period, team: session.team?.plan_config.max_spend_per_period })}
                blocking={i === blocking}
              />
            ))}
            {!dims.some((d) => d.reason.replace(TEAM_REASON, "").startsWith("model_limit:")) && <p className="muted">No per-model token caps on {session.team ? "these plans" : "this plan"}.</p>}
          </div>
        );
      }}
    </Query>
  );
}

function GateEvents({ id }: { id: string }) {
  const [params, set] = useUrlState();
  const paging = usePaging(params, set, "gcursor");
  const f = gateEventsFilter(params);
  const events = useQuery(gateEventsRead(id, f, paging.cursor));
  const [reason, setReason] = useState(f.gate_reason ?? "");
  // A window's gate event is in its metric (dollars, tokens or calls): the user's dimensions say which (the same query as the bars).
  const dims = useQuery(limitsRead(id));
  const valueOverLimit = (e: GateEvent) => {
    // A dimension the user no longer has (a former plan's, team's): the unit its reason names; a window limit's is not in its name, so plain figures.
    const metric = dims.data?.limits.find((d) => d.reason === e.gate_reason)?.metric ?? metricOfReason(e.gate_reason);
    const fmt = metric === "spend" ? fmtExactMoney : metric === undefined ? fmtPlain : fmtInt;
    return `${fmt(e.current_value)} / ${fmt(e.limit_value)}`;
  };
  const change = (patch: Record<string, string | null>) => set({ ...patch, ...paging.reset });
  // The API compares gate_reason exactly: suggest the user's own reasons (its dimensions', its
  // team's included), and those of the events shown (a plan it was on before may have had others).
  const reasons = [...new Set([...(dims.data?.limits.map((d) => d.reason) ?? []), ...(events.data?.events.map((e) => e.gate_reason) ?? [])])];
  return (
    <Card title="Gate events">
      <div className="filters" role="group" aria-label="Filter gate events">
        <Field label="Status">
          {(fid) => (
            <select id={fid} value={f.status ?? ""} onChange={(e) => change({ status: e.target.value || null })}>
              <option value="">Soft and hard</option>
              <option value="soft_gate">Soft gate</option>
              <option value="hard_gate">Hard gate</option>
            </select>
          )}
        </Field>
        <InlineForm button="Filter" onSubmit={() => change({ reason: reason.trim() || null })}>
          <Field label="Gate reason">
            {(fid) => <input id={fid} list="gate-reasons" value={reason} onChange={(e) => setReason(e.target.value)} placeholder="total_spend" />}
          </Field>
          <datalist id="gate-reasons">
            {reasons.map((r) => (
              <option key={r} value={r} />
            ))}
          </datalist>
        </InlineForm>
        <label className="check">
          <input type="checkbox" checked={f.blocked_only} onChange={(e) => change({ blocked: e.target.checked ? "1" : null })} /> Blocked only
        </label>
        <Field label="Since">
          {(fid) => <input id={fid} type="datetime-local" value={f.since} onChange={(e) => change({ since: e.target.value || null })} />}
        </Field>
        <Field label="Until">
          {(fid) => <input id={fid} type="datetime-local" value={f.until} onChange={(e) => change({ until: e.target.value || null })} />}
        </Field>
        <PerPage value={f.limit} sizes={[25, 100, 500]} onChange={(limit) => change({ limit })} />
      </div>
      <ListQuery q={events} label="Loading gate events" items={(page) => page.events} pages={{ paging, next: (page) => page.next_cursor, order: "newest first" }} empty="No gate events match. Gate events arrive from the client library when a user reaches a soft or hard gate.">
        {(list, page) => (
          <DataTable caption="Gate events, newest first" columns={["Time", "Status", "Reason", num("Usage"), num("Value / limit"), "Blocked", "Message"]} paging={paging} next={page.next_cursor}>
            {list.map((e: GateEvent) => (
              <tr key={e.id}>
                <td>
                  <Time iso={e.timestamp} />
                </td>
                <td>
                  <span className={`badge ${e.status === "hard_gate" ? "bad" : "warn"}`}>{e.status === "hard_gate" ? "Hard gate" : "Soft gate"}</span>
                </td>
                <td>{e.gate_reason}</td>
                <td className="num">{fmtPct(e.usage_pct)}</td>
                <td className="num">
                  {valueOverLimit(e)}
                </td>
                <td>{e.blocked ? "yes" : "no"}</td>
                <td>{e.message ?? ""}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </ListQuery>
    </Card>
  );
}

function Subscription({ id, session, billing }: { id: string; session: Session | undefined; billing: string | null | undefined }) {
  const queryClient = useQueryClient();
  return (
    <SubscriptionForm
      current={session && billing !== undefined ? { plan_id: session.plan_id ?? null, period: session.billing_period, billing_subscription_id: billing } : undefined}
      save={(body) => ok(api.POST("/api/v1/users/{user_id}/subscription", { params: p(id), body }))}
      onSaved={() => {
        for (const k of ["user", "session", "limits", "usage", "users"]) queryClient.invalidateQueries({ queryKey: [k] });
        queryClient.invalidateQueries({ queryKey: ["plan-subscribers"] });
      }}
    />
  );
}

/** The queries a usage event makes stale (their keys' first part: api/reads.ts and the team screen). */
const MOVED_BY_USAGE = [
  "session",
  "limits",
  "usage",
  "users",
  "credits",
  "credit-ledger",
  "team-usage",
  "team-limits",
  "team-member-sessions",
  "summary",
  "timeseries",
  "gate-timeseries",
  "breakdown",
  "top-users",
  "top-teams",
];

/** What recording the manual event will charge, asked before it is sent: it counts at once (limits, credits, webhooks). */
function describeCharge(id: string, f: { cost: string; model: string; input_tokens: string; output_tokens: string }, pricing: Pricing | null | undefined): string {
  const [input, output] = [Number(f.input_tokens) || 0, Number(f.output_tokens) || 0];
  // Priced here as the service will price it (rules' price), when the plan is known.
  const priced = f.cost === "" && pricing ? price(f.model || null, input, output, [], pricing) : null;
  const unpriced = priced !== null && input + output > 0 && rateOf(priced.model, pricing!) === null;
  const what =
    f.cost !== ""
      ? `a charge of ${fmtExactMoney(Number(f.cost))}${f.model ? ` (model ${f.model})` : ""}`
      : `${fmtInt(input)} input and ${fmtInt(output)} output tokens of ${f.model || "no model"}, priced by the plan's rates${priced ? ` at ${fmtExactMoney(priced.cost_total)}` : ""}`;
  const warning = unpriced ? ` The plan has no rate for ${f.model || "calls without a model"} (nor a default_cost_rate): these tokens cost $0.` : "";
  return `Record ${what} for ${id}?${warning} It counts toward the user's limits at once, and may draw credits and send webhooks.`;
}

function ManualEvent({ id, pricing }: { id: string; pricing: Pricing | null | undefined }) {
  const [form, setFormState] = useState({ cost: "", model: "", input_tokens: "", output_tokens: "", description: "" });
  const [confirming, setConfirming] = useState(false);
  // One key per event: sent again after a dropped connection, the same form is the same event
  // (the service answers the first); edited, it is another one.
  const [key, setKey] = useState(newId);
  // Editing after the question was asked takes it back: what is confirmed is what is sent.
  const setForm = (next: typeof form) => {
    setConfirming(false);
    setFormState(next);
    setKey(newId());
  };
  const queryClient = useQueryClient();
  const record = useMutation({
    mutationFn: () =>
      ok(
        api.POST("/api/v1/events", {
          body: {
            user_id: id,
            cost: form.cost === "" ? null : Number(form.cost),
            model: form.model || null,
            input_tokens: Number(form.input_tokens) || 0,
            output_tokens: Number(form.output_tokens) || 0,
            description: form.description || null,
            idempotency_key: key,
          },
        }),
      ),
    onSuccess: () => {
      // Everything the event moves: the user's bars and usage, its credits (a draw beyond the
      // allowance) and ledger, its team's figures, and the overview's.
      for (const k of MOVED_BY_USAGE) queryClient.invalidateQueries({ queryKey: [k] });
      setForm({ cost: "", model: "", input_tokens: "", output_tokens: "", description: "" });
    },
    onSettled: () => setConfirming(false),
  });
  const err = record.error instanceof ApiError ? record.error : null;
  const issue = useFieldIssues(record.error, form);
  return (
    <Card title="Record a manual event">
      <form
        className="stack"
        aria-label="Record a manual event"
        onSubmit={submitted(() => (confirming ? record.mutate() : setConfirming(true)))}
      >
        <div className="row">
          <Field label="Cost in dollars (optional)" error={issue("cost")}>
            {(fid, d) => <input id={fid} aria-describedby={d} type="number" step="any" min={0} value={form.cost} onChange={(e) => setForm({ ...form, cost: e.target.value })} />}
          </Field>
          <Field label="Model (optional)" error={issue("model")}>
            {(fid, d) => <input id={fid} aria-describedby={d} value={form.model} onChange={(e) => setForm({ ...form, model: e.target.value })} />}
          </Field>
        </div>
        <p className="hint">A cost is used as given; without one, the cost comes from the plan's rates for the model and tokens.</p>
        <div className="row">
          <Field label="Input tokens" error={issue("input_tokens")}>
            {(fid, d) => <input id={fid} aria-describedby={d} type="number" min={0} step={1} value={form.input_tokens} onChange={(e) => setForm({ ...form, input_tokens: e.target.value })} />}
          </Field>
          <Field label="Output tokens" error={issue("output_tokens")}>
            {(fid, d) => <input id={fid} aria-describedby={d} type="number" min={0} step={1} value={form.output_tokens} onChange={(e) => setForm({ ...form, output_tokens: e.target.value })} />}
          </Field>
        </div>
        <Field label="Description (optional)" error={issue("description")}>
          {(fid, d) => <input id={fid} aria-describedby={d} value={form.description} onChange={(e) => setForm({ ...form, description: e.target.value })} />}
        </Field>
        {err && !err.issues.length && <FormAlert>{err.message}</FormAlert>}
        {record.isSuccess && <FormStatus>Recorded {record.data.id}: {fmtExactMoney(record.data.cost)}.</FormStatus>}
        <ConfirmedSubmit
          confirming={confirming}
          name="Confirm the manual event"
          question={describeCharge(id, form, pricing)}
          label="Record event…"
          yes="Yes, record"
          busy={record.isPending}
          busyLabel="Recording…"
          onBack={() => setConfirming(false)}
        />
      </form>
    </Card>
  );
}


const fmtPlain = (n: number) => String(n);

/** The end user's portal tokens (BUDGETS.md §5): a leaked one is cut off here, with every other of the user's. */
function PortalTokens({ id }: { id: string }) {
  const [confirming, setConfirming] = useState(false);
  const revoke = useMutation({
    mutationFn: () => ok(api.DELETE("/api/v1/users/{user_id}/portal-tokens", { params: { path: { user_id: id } } })),
    onSettled: () => setConfirming(false),
  });
  return (
    <Card title="Portal tokens">
      <p className="muted">
        A portal token lets the user's own page read this user's usage and limits (the widget, <code>GET /portal/me</code>). Tokens are minted by your product and shown only then.
      </p>
      <div className="row wrap">
        <button type="button" className="danger" onClick={() => setConfirming(true)} disabled={confirming || revoke.isPending}>
          Revoke portal tokens…
        </button>
      </div>
      {confirming && (
        <ConfirmBox name="Confirm revoking the portal tokens" yes="Yes, revoke" busyYes="Revoking…" busy={revoke.isPending} no="Keep them" onYes={() => revoke.mutate()} onNo={() => setConfirming(false)}>
          Revoke every portal token of {id}? Pages showing them are refused from their next request; your product mints new ones.
        </ConfirmBox>
      )}
      {revoke.error && <ErrorState error={revoke.error} />}
      {revoke.data && !confirming && (
        <DoneStatus key={revoke.submittedAt}>
          {revoke.data.revoked === 1 ? "1 token revoked." : `${fmtInt(revoke.data.revoked)} tokens revoked.`}
        </DoneStatus>
      )}
    </Card>
  );
}
