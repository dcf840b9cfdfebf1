import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { CALENDAR_WINDOWS, MAX_ROLLING_MINUTES, METRICS, WINDOWS, isTimeZone, type Metric, type WindowKind } from "@meter/rules";
import { ApiError, api, ok, type Issue, type Plan, type PlanInput } from "../api/client.ts";
import { planSubscribersRead, plansRead } from "../api/reads.ts";
import { Card, DataTable, Field, FormAlert, FormStatus, ListQuery, num, Options, QuickStart, Screen, Submit, submitted, Time } from "../components.tsx";
import { useEditedSince } from "../field-issues.ts";
import { fmtExactMoney, fmtGateAt, fmtInt } from "../format.ts";
import { numberOrText } from "../inputs.ts";
import { describeLimit, fmtMinutes, LIMIT_FIELDS, limitIssueAt, limitProblems, planIssuePath, type LimitField, type PlanLimit } from "../limits.ts";
import { useUrlState } from "../url-state.ts";


/** The plan fields the form edits as one text each; `limits` and `time_zone` have editors of their own. */
type PlanForm = Record<Exclude<keyof PlanInput, "limits" | "time_zone">, string>;
const DEFAULTS: PlanForm = {
  name: "",
  max_spend_per_period: "",
  max_spend_per_session: "",
  session_timeout_minutes: "30",
  soft_gate_at: "0.8",
  hard_gate_at: "1",
  model_limits: "{}",
  cost_rates: "{}",
  default_cost_rate: "",
  tool_costs: "{}",
  default_tool_cost: "0.02",
  pre_call_estimate: "false",
  pre_call_buffer_tokens: "4096",
  credits_enabled: "false",
  credits_low_at: "",
};
const JSON_FIELDS = new Set(["model_limits", "cost_rates", "tool_costs", "default_cost_rate"]);
const NULLABLE = new Set(["max_spend_per_period", "max_spend_per_session", "default_cost_rate", "credits_low_at"]);
const BOOLEANS = new Set(["pre_call_estimate", "credits_enabled"]);

const toForm = (p: Plan): PlanForm =>
  Object.fromEntries(
    (Object.keys(DEFAULTS) as (keyof PlanForm)[]).map((k) => {
      const v = p[k];
      return [k, v == null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v)];
    }),
  ) as PlanForm;

/** What the form can tell before sending: a name left empty, JSON that does not parse (sent, it came back as "must be object"). */
function localProblems(form: PlanForm, changed: (k: keyof PlanForm) => boolean, editing: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  if (changed("name") && form.name.trim() === "") out.name = "Required: a name unique within the product.";
  // A new plan takes the default of a field left empty; a plan's field emptied would send nothing
  // and change nothing (the form said "saved"): the value has to be typed.
  if (editing) {
    for (const k of Object.keys(DEFAULTS) as (keyof PlanForm)[]) {
      if (k === "name" || NULLABLE.has(k) || JSON_FIELDS.has(k) || BOOLEANS.has(k) || !changed(k) || form[k].trim() !== "") continue;
      out[k] = `Required: type a value (the default is ${DEFAULTS[k]}).`;
    }
  }
  for (const k of JSON_FIELDS) {
    const t = form[k as keyof PlanForm].trim();
    if (!changed(k as keyof PlanForm) || t === "") continue;
    try {
      JSON.parse(t);
    } catch (e) {
      out[k] = `not valid JSON (${(e as Error).message})`;
    }
  }
  return out;
}

/** A plan-level refusal's field (`plans[0].soft_gate_at (0.9) must not exceed …`, `credits_low_at must …`), when the form has it. */
function refusedField(problem: string): keyof PlanForm | undefined {
  const m = /^(?:plans\[\d+\]\.)?([a-z_]+)\b/.exec(problem);
  return m && m[1]! in DEFAULTS ? (m[1] as keyof PlanForm) : undefined;
}

/** A field's text as the API's value; text that is not a number or JSON goes as is, for the API to refuse beside its field. */
function parse(key: string, text: string): unknown {
  const t = text.trim();
  if (key === "name") return text;
  if (BOOLEANS.has(key)) return t === "true";
  // An emptied map (model limits, rates, tool costs) is none: {} clears it.
  if (t === "") return NULLABLE.has(key) ? null : JSON_FIELDS.has(key) ? {} : undefined;
  if (JSON_FIELDS.has(key)) {
    try {
      return JSON.parse(t);
    } catch {
      return t;
    }
  }
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}

/** A limit as the form holds it: text for the numbers, so that what was typed is what is sent. */
interface LimitRow {
  key: number;
  name: string;
  metric: Metric;
  max: string;
  window: WindowKind;
  duration_minutes: string;
  model: string;
  soft_gate_at: string;
  hard_gate_at: string;
  /** On a team's plan: the members' sum or each member's own. */
  scope: "team" | "member";
}
let rowKeys = 0;
const newRow = (): LimitRow => ({ key: ++rowKeys, name: "", metric: "spend", max: "", window: "day", duration_minutes: "", model: "", soft_gate_at: "", hard_gate_at: "", scope: "team" });
const toRow = (l: PlanLimit & { scope?: string | null }): LimitRow => ({
  key: ++rowKeys,
  name: l.name,
  metric: l.metric,
  max: String(l.max),
  window: l.window,
  duration_minutes: l.duration_minutes == null ? "" : String(l.duration_minutes),
  model: l.model ?? "",
  soft_gate_at: l.soft_gate_at == null ? "" : String(l.soft_gate_at),
  hard_gate_at: l.hard_gate_at == null ? "" : String(l.hard_gate_at),
  scope: l.scope === "member" ? "member" : "team",
});
/** The rows as the API's `limits`; a duration goes with a rolling window only (the field is hidden otherwise). */
const limitsBody = (rows: LimitRow[]) =>
  rows.map((r) => ({
    name: r.name.trim(),
    metric: r.metric,
    max: numberOrText(r.max) ?? r.max,
    window: r.window,
    duration_minutes: r.window === "rolling" ? numberOrText(r.duration_minutes) : null,
    model: r.model.trim() || null,
    soft_gate_at: numberOrText(r.soft_gate_at),
    hard_gate_at: numberOrText(r.hard_gate_at),
    scope: r.scope === "member" ? r.scope : null,
  }));
const MAX_LIMITS = 16;
const WINDOW_LABELS: Record<WindowKind, string> = { minute: "minute", hour: "hour", day: "day", week: "week", month: "month", period: "billing period", rolling: "rolling" };
const MAX_LABELS: Record<Metric, string> = { spend: "Max ($)", tokens: "Max (tokens)", requests: "Max (calls)" };
// Every zone this browser knows, for the time zone field's suggestions; UTC first (the default).
const TIME_ZONES = ["UTC", ...(Intl.supportedValuesOf?.("timeZone") ?? []).filter((z) => z !== "UTC")];

/**
 * Where the form shows an issue: beside a plan field (its name), beside a limit row's field or the
 * time zone (limitProblems places those: "limits", "time_zone"); undefined: in the alert (`/plans`
 * and `` name a limit of the product, `/limits` the whole list).
 */
function placeOf(issue: Issue): string | undefined {
  const at = limitIssueAt(issue.path);
  if (at) return at === "time_zone" ? at : "limits";
  const field = planIssuePath(issue.path)[0];
  return field !== undefined && Object.hasOwn(DEFAULTS, field) ? field : undefined;
}

/** The issues shown beside the plan's own fields, by field. */
function issuesByField(issues: Issue[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of issues) {
    const field = placeOf(i);
    if (field && Object.hasOwn(DEFAULTS, field)) out[field] = out[field] ? `${out[field]}; ${i.message}` : i.message;
  }
  return out;
}

/** What the API refused that no field of the form shows (the product's 50 plans, its 1 MiB, the whole list of limits), said in the alert. */
function unplacedIssues(issues: Issue[]): string {
  return issues
    .filter((i) => !placeOf(i))
    .map((i) => i.message)
    .join("; ");
}

export function PlansScreen() {
  const [params, set] = useUrlState();
  const editing = params.get("edit");
  const plans = useQuery(plansRead());
  const subs = useQuery(planSubscribersRead());
  const count = (name: string) => subs.data?.plans.find((s) => s.plan_name === name);
  const plan = plans.data?.plans.find((p) => p.id === editing);
  return (
    <Screen title="Plans">
    <Card title="Plans">
      <ListQuery q={plans} label="Loading plans" items={(d) => d.plans} empty={<>No plans yet. Create one below: a plan sets each user's caps, rates and gates. See the <QuickStart />.</>}>
        {(list) => (
          <DataTable caption="Plans" columns={["Name", num("Users"), num("Teams"), num("Per period"), num("Per session"), num("Gates"), "Windows", "Credits", "Models priced", "Updated", { label: "Actions", hidden: true }]}>
            {list.map((p: Plan) => (
              <tr key={p.id}>
                <td>{p.name}</td>
                <td className="num">{subs.error ? "?" : fmtInt(count(p.name)?.subscriber_count ?? 0)}</td>
                <td className="num">{subs.error ? "?" : fmtInt(count(p.name)?.team_subscriber_count ?? 0)}</td>
                <td className="num">{p.max_spend_per_period == null ? "unlimited" : fmtExactMoney(p.max_spend_per_period)}</td>
                <td className="num">{p.max_spend_per_session == null ? "unlimited" : fmtExactMoney(p.max_spend_per_session)}</td>
                <td className="num">
                  {fmtGateAt(p.soft_gate_at)} / {fmtGateAt(p.hard_gate_at)}
                </td>
                <td>
                  <Windows plan={p} />
                </td>
                <td>{p.credits_enabled ? (p.credits_low_at == null ? "on" : `on · low below ${fmtExactMoney(p.credits_low_at)}`) : "off"}</td>
                <td>{Object.keys(p.cost_rates).join(", ") || "—"}</td>
                <td>
                  <Time iso={p.updated_at} />
                </td>
                <td>
                  <button type="button" className="secondary small" onClick={() => set({ edit: p.id })} aria-label={`Edit plan ${p.name}`}>
                    Edit
                  </button>
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </ListQuery>
    </Card>
    {plan ? <PlanEditor key={plan.id} plan={plan} onDone={() => set({ edit: null })} /> : <PlanEditor key="new" onDone={() => {}} />}
    </Screen>
  );
}

/** A plan's limits as sentences ("daily: $0.10 a day"), with the zone its calendar windows reset in when it is not UTC. */
function Windows({ plan }: { plan: Plan }) {
  const limits = plan.limits ?? [];
  if (limits.length === 0) return <span>—</span>;
  const calendar = limits.some((l) => (CALENDAR_WINDOWS as readonly string[]).includes(l.window));
  return (
    <ul className="windows" aria-label={`Windows of ${plan.name}`}>
      {limits.map((l) => (
        <li key={l.name}>
          <strong>{l.name}</strong>: {describeLimit(l)}
          {l.scope === "member" && " per member"}
        </li>
      ))}
      {calendar && plan.time_zone && plan.time_zone !== "UTC" && <li className="muted">days in {plan.time_zone}</li>}
    </ul>
  );
}

function PlanEditor({ plan, onDone }: { plan?: Plan; onDone: () => void }) {
  const original = plan ? toForm(plan) : DEFAULTS;
  const originalZone = plan?.time_zone ?? "UTC";
  const [form, setForm] = useState<PlanForm>(original);
  const [rows, setRows] = useState<LimitRow[]>(() => (plan?.limits ?? []).map(toRow));
  const [zone, setZone] = useState(originalZone);
  const [zoneChecked, setZoneChecked] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const queryClient = useQueryClient();
  const originalLimits = JSON.stringify(limitsBody((plan?.limits ?? []).map(toRow)));
  const save = useMutation({
    mutationFn: async () => {
      if (plan) {
        // Only the fields that changed are sent: a PATCH changes exactly those (and replaces `limits` whole).
        const body: Record<string, unknown> = {};
        for (const k of Object.keys(form) as (keyof PlanForm)[]) if (form[k] !== original[k]) body[k] = parse(k, form[k]);
        if (JSON.stringify(limitsBody(rows)) !== originalLimits) body.limits = limitsBody(rows);
        if (zone.trim() !== originalZone) body.time_zone = zone.trim();
        if (Object.keys(body).length === 0) return { name: plan.name, changed: 0 };
        const updated = await ok(api.PATCH("/api/v1/config/plans/{plan_id}", { params: { path: { plan_id: plan.id } }, body: body as never }));
        return { name: updated.name, changed: Object.keys(body).length };
      }
      const body: Record<string, unknown> = Object.fromEntries(Object.entries(form).map(([k, v]) => [k, parse(k, v)]).filter(([, v]) => v !== undefined));
      if (rows.length > 0) body.limits = limitsBody(rows);
      if (zone.trim() !== "UTC") body.time_zone = zone.trim();
      const created = await ok(api.POST("/api/v1/config/plans", { body: { plans: [body as PlanInput] } }));
      return { name: created.plans[0]?.name ?? form.name, changed: -1 };
    },
    onMutate: () => setSaved(null),
    onSuccess: (r) => {
      queryClient.invalidateQueries({ queryKey: ["plans"] });
      queryClient.invalidateQueries({ queryKey: ["plan-subscribers"] });
      setSaved(r.changed === -1 ? `Plan ${r.name} created.` : r.changed === 0 ? "Nothing changed." : `Plan ${r.name} saved (${r.changed} field${r.changed === 1 ? "" : "s"}).`);
      if (!plan) {
        setForm(DEFAULTS);
        setRows([]);
        setZone("UTC");
        setZoneChecked(false);
      }
    },
  });
  const err = save.error instanceof ApiError ? save.error : null;
  // The service names the limit and field it refuses (`limits[1] ("daily").duration_minutes: …`): each lands beside its field,
  // and so does a plan field it names first (`plans[0].soft_gate_at (0.9) must not exceed …`).
  const refused = err ? limitProblems(err.message, err.issues) : { rows: {}, other: [] };
  const [local, setLocal] = useState<Record<string, string>>({});
  // A field edited since the API's answer, or since the checks made on submit, drops what they said of
  // it: the plan's fields, a limit's (`limits[1].max` as "1.max") and the time zone.
  const answered: Record<string, string> = { ...form, time_zone: zone };
  rows.forEach((r, i) => {
    for (const f of LIMIT_FIELDS) answered[`${i}.${f}`] = r[f];
  });
  const editedSinceAnswer = useEditedSince(save.error, answered);
  const editedSinceCheck = useEditedSince(local, form);
  const issues: Record<string, string> = {};
  for (const [field, problem] of Object.entries(err ? issuesByField(err.issues) : {})) if (!editedSinceAnswer(field)) issues[field] = problem;
  for (const [field, problem] of Object.entries(local)) if (!editedSinceCheck(field)) issues[field] = problem;
  const unplaced: string[] = [];
  for (const problem of err && !err.issues.length ? refused.other : []) {
    const field = refusedField(problem);
    if (!field) unplaced.push(problem);
    else if (!editedSinceAnswer(field)) issues[field] = issues[field] ? `${issues[field]}; ${problem}` : problem;
  }
  // A row's minutes are hidden unless its window is rolling: what was said of them goes with them.
  const shown = (i: string, f: string) => !editedSinceAnswer(`${i}.${f}`) && (f !== "duration_minutes" || rows[Number(i)]?.window === "rolling");
  const refusedRows = Object.fromEntries(Object.entries(refused.rows).map(([i, problems]) => [i, Object.fromEntries(Object.entries(problems).filter(([f]) => shown(i, f)))]));
  const zoneRefused = editedSinceAnswer("time_zone") ? undefined : refused.time_zone;
  // Once every field the answer marked was edited, "fix the fields marked above" would point at nothing.
  const marked = Object.keys(issues).length > 0 || Object.values(refusedRows).some((p) => Object.keys(p).length > 0) || zoneRefused !== undefined;
  const zoneProblem = zoneChecked && !isTimeZone(zone.trim()) ? `"${zone.trim()}" is not a time zone: pick an IANA name such as Europe/Paris or America/New_York.` : zoneRefused;
  const text = (k: keyof PlanForm, label: string, hint: string, type: "text" | "number" | "json" = "number") => (
    <Field label={label} error={issues[k]} hint={hint}>
      {(id, d) =>
        type === "json" ? (
          <textarea id={id} aria-describedby={d} rows={2} spellCheck={false} value={form[k]} onChange={(e) => setForm({ ...form, [k]: e.target.value })} aria-invalid={!!issues[k]} />
        ) : (
          <input id={id} aria-describedby={d} type={type === "number" ? "text" : "text"} inputMode={type === "number" ? "decimal" : undefined} value={form[k]} onChange={(e) => setForm({ ...form, [k]: e.target.value })} aria-invalid={!!issues[k]} />
        )
      }
    </Field>
  );
  // Adding or removing a row moves the others: the service's word about "limits[2]" no longer names the row shown third.
  const editRows = (next: LimitRow[]) => {
    if (next.length !== rows.length) save.reset();
    setRows(next);
  };
  const submit = submitted(() => {
    setZoneChecked(true);
    const problems = localProblems(form, (k) => !plan || form[k] !== original[k], plan !== undefined);
    setLocal(problems);
    if (Object.keys(problems).length > 0) return save.reset();
    if (isTimeZone(zone.trim())) save.mutate();
  });
  return (
    <Card title={plan ? `Edit plan ${plan.name}` : "Create a plan"}>
      <form onSubmit={submit} noValidate aria-label={plan ? `Edit plan ${plan.name}` : "Create a plan"} className="plan-form">
        <div className="form-grid">
          {text("name", "Name", "Required; unique within the product.", "text")}
          {text("max_spend_per_period", "Max spend per period ($)", "Default: empty = unlimited. A cap needs subscriptions with period dates.")}
          {text("max_spend_per_session", "Max spend per session ($)", "Default: empty = unlimited.")}
          {text("session_timeout_minutes", "Session timeout (minutes)", "Default 30.")}
          {text("soft_gate_at", "Soft gate at (fraction)", "Default 0.80: calls run and are reported from here.")}
          {text("hard_gate_at", "Hard gate at (fraction)", "Default 1.00: calls are blocked from here; not below the soft gate.")}
          {text("default_tool_cost", "Default tool cost ($ per call)", "Default 0.02; 0 for free tools.")}
          {text("pre_call_buffer_tokens", "Pre-call buffer (output tokens)", "Default 4096.")}
          {text("cost_rates", "Cost rates per 1K tokens (JSON)", 'Default {}. e.g. {"gpt-4.1": {"input": 0.002, "output": 0.008}}', "json")}
          {text("default_cost_rate", "Default cost rate (JSON)", 'Default: empty = none. e.g. {"input": 0.001, "output": 0.002}', "json")}
          {text("model_limits", "Model token limits (JSON)", 'Default {}. e.g. {"gpt-4.1": {"max_tokens_per_period": 100000}}', "json")}
          {text("tool_costs", "Tool costs (JSON)", 'Default {}. e.g. {"web_search": 0.01}', "json")}
          <div className="field">
            <label className="check">
              <input type="checkbox" checked={form.pre_call_estimate === "true"} onChange={(e) => setForm({ ...form, pre_call_estimate: String(e.target.checked) })} /> Estimate before each call (pre_call_estimate, default off)
            </label>
            {issues.pre_call_estimate && <small className="field-error">{issues.pre_call_estimate}</small>}
          </div>
          <div className="field">
            <label className="check">
              <input type="checkbox" checked={form.credits_enabled === "true"} aria-describedby="credits-enabled-hint" onChange={(e) => setForm({ ...form, credits_enabled: String(e.target.checked) })} /> Draw prepaid credits (credits_enabled, default off)
            </label>
            <small id="credits-enabled-hint" className="hint">
              Spend beyond the period cap draws the user's credit balance; a cap of $0 is pure prepaid.
            </small>
            {issues.credits_enabled && <small className="field-error">{issues.credits_enabled}</small>}
          </div>
          {text("credits_low_at", "Credits low below ($)", "Default: empty = never. credits.low fires once when the balance falls below it.")}
        </div>
        <LimitsEditor rows={rows} onChange={editRows} refused={refusedRows} zone={zone} onZone={setZone} zoneProblem={zoneProblem} />
        {err && !err.issues.length && (err.status === 409 || unplaced.length > 0 || marked) && (
          <FormAlert>{err.status === 409 ? `A plan named ${form.name} exists already.` : `The API refused the plan (${err.status}): ${unplaced.join("; ") || "fix the fields marked above."}`}</FormAlert>
        )}
        {err && err.issues.length > 0 && (unplacedIssues(err.issues) || marked) && (
          <FormAlert>
            The API refused the plan ({err.status}): {unplacedIssues(err.issues) || "fix the fields marked above."}
          </FormAlert>
        )}
        {saved && <FormStatus>{saved}</FormStatus>}
        <div className="row">
          <Submit busy={save.isPending} busyLabel="Saving…">
            {plan ? "Save changes" : "Create plan"}
          </Submit>
          {plan && (
            <button type="button" className="secondary" onClick={onDone}>
              Close
            </button>
          )}
        </div>
      </form>
    </Card>
  );
}

/** The plan's windows and rate limits, one row each, and the time zone its calendar windows reset in. */
function LimitsEditor({
  rows,
  onChange,
  refused,
  zone,
  onZone,
  zoneProblem,
}: {
  rows: LimitRow[];
  onChange: (rows: LimitRow[]) => void;
  refused: Record<number, Partial<Record<LimitField, string>>>;
  zone: string;
  onZone: (zone: string) => void;
  zoneProblem: string | undefined;
}) {
  const set = (i: number, patch: Partial<LimitRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const calendar = rows.some((r) => (CALENDAR_WINDOWS as readonly string[]).includes(r.window));
  return (
    <fieldset className="limits">
      <legend>Windows and rate limits</legend>
      <p className="hint">
        Each limit caps spend, tokens (input + output) or requests (calls) over a window; a call must pass every one. Its gate reason is <code>limit:&lt;name&gt;</code>. Weeks start on Monday; a rolling window counts its last N minutes. Model: count only that model's calls (empty: every call). Gates: fractions of max (empty: the plan's). Counts: on a team's plan, the members' sum or each member separately (a user's plan counts the user). Default: no limits.
      </p>
      {rows.map((r, i) => {
        const problems = refused[i] ?? {};
        const max = Number(r.max);
        const minutes = Number(r.duration_minutes);
        const readable =
          r.max.trim() !== "" && Number.isFinite(max) && (r.window !== "rolling" || (Number.isInteger(minutes) && minutes >= 1))
            ? describeLimit({ metric: r.metric, max, window: r.window, duration_minutes: r.window === "rolling" ? minutes : null, model: r.model.trim() || null })
            : null;
        const input = (f: "name" | "max" | "duration_minutes" | "model" | "soft_gate_at" | "hard_gate_at", label: string, extra: { placeholder?: string; inputMode?: "decimal" | "numeric"; hint?: string } = {}) => (
          <Field label={label} error={problems[f]} hint={extra.hint}>
            {(id, d) => <input id={id} aria-describedby={d} value={r[f]} inputMode={extra.inputMode} placeholder={extra.placeholder} aria-invalid={!!problems[f]} onChange={(e) => set(i, { [f]: e.target.value })} />}
          </Field>
        );
        return (
          <fieldset key={r.key} className="limit-row" aria-label={`Limit ${i + 1}`}>
            <legend>
              Limit {i + 1}
              {readable && <span className="limit-readable"> · {readable}</span>}
            </legend>
            <div className="limit-grid">
              {input("name", "Name", { placeholder: "daily" })}
              <Field label="Metric" error={problems.metric}>
                {(id, d) => (
                  <select id={id} aria-describedby={d} value={r.metric} aria-invalid={!!problems.metric} onChange={(e) => set(i, { metric: e.target.value as Metric })}>
                    <Options values={METRICS} label={(m) => (m === "spend" ? "spend ($)" : m)} />
                  </select>
                )}
              </Field>
              {input("max", MAX_LABELS[r.metric], { inputMode: r.metric === "spend" ? "decimal" : "numeric", placeholder: r.metric === "spend" ? "0.10" : "60" })}
              <Field label="Window" error={problems.window}>
                {(id, d) => (
                  <select id={id} aria-describedby={d} value={r.window} aria-invalid={!!problems.window} onChange={(e) => set(i, { window: e.target.value as WindowKind })}>
                    <Options values={WINDOWS} label={(w) => WINDOW_LABELS[w]} />
                  </select>
                )}
              </Field>
              {r.window === "rolling" &&
                input("duration_minutes", "Minutes", {
                  inputMode: "numeric",
                  placeholder: "300",
                  hint: Number.isInteger(minutes) && minutes >= 1 ? `= ${fmtMinutes(minutes)}` : `1-${fmtInt(MAX_ROLLING_MINUTES)}`,
                })}
              {r.window !== "rolling" && <div className="limit-empty" aria-hidden="true" />}
              {input("model", "Model", { placeholder: "every model" })}
              {input("soft_gate_at", "Soft gate", { inputMode: "decimal", placeholder: "plan's" })}
              {input("hard_gate_at", "Hard gate", { inputMode: "decimal", placeholder: "plan's" })}
              <Field label="Counts" error={problems.scope}>
                {(id, d) => (
                  <select id={id} aria-describedby={d} value={r.scope} aria-invalid={!!problems.scope} onChange={(e) => set(i, { scope: e.target.value as LimitRow["scope"] })}>
                    <option value="team">team sum</option>
                    <option value="member">each member</option>
                  </select>
                )}
              </Field>
              <button type="button" className="danger small" onClick={() => onChange(rows.filter((_, j) => j !== i))} aria-label={`Remove limit ${i + 1}${r.name ? ` (${r.name})` : ""}`}>
                Remove
              </button>
            </div>
          </fieldset>
        );
      })}
      <div className="limits-foot">
        <button type="button" className="secondary" disabled={rows.length >= MAX_LIMITS} onClick={() => onChange([...rows, newRow()])}>
          Add a limit
        </button>
        {rows.length >= MAX_LIMITS && <span className="hint">At most {MAX_LIMITS} limits per plan.</span>}
        <Field label="Time zone" error={zoneProblem} hint={`Default UTC. ${calendar ? "Minute to month windows" : "Calendar windows"} reset at midnight there (weeks on Monday).`}>
          {(id, d) => (
            <>
              <input id={id} aria-describedby={d} list="time-zones" value={zone} spellCheck={false} aria-invalid={!!zoneProblem} onChange={(e) => onZone(e.target.value)} />
              <datalist id="time-zones">
                {TIME_ZONES.map((z) => (
                  <option key={z} value={z} />
                ))}
              </datalist>
            </>
          )}
        </Field>
      </div>
    </fieldset>
  );
}
