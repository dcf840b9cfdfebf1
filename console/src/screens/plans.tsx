import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiError, api, ok, type Issue, type Plan, type PlanInput } from "../api/client.ts";
import { Card, DataTable, Empty, Field, FormAlert, FormStatus, num, Query, QuickStart, Screen, Submit, submitted, Time } from "../components.tsx";
import { fmtInt, fmtMoney } from "../format.ts";
import { useUrlState } from "../url-state.ts";

/** The form's text for every plan field; defaults are those the API fills in (README "Plan fields"). */
type PlanForm = Record<keyof PlanInput, string>;
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
  limits: "[]",
  time_zone: "UTC",
};
const JSON_FIELDS = new Set(["model_limits", "cost_rates", "tool_costs", "default_cost_rate", "limits"]);
const NULLABLE = new Set(["max_spend_per_period", "max_spend_per_session", "default_cost_rate", "limits", "time_zone"]);

const toForm = (p: Plan): PlanForm =>
  Object.fromEntries(
    (Object.keys(DEFAULTS) as (keyof PlanInput)[]).map((k) => {
      const v = p[k];
      return [k, v == null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v)];
    }),
  ) as PlanForm;

/** A field's text as the API's value; text that is not a number or JSON goes as is, for the API to refuse beside its field. */
function parse(key: string, text: string): unknown {
  const t = text.trim();
  if (key === "name") return text;
  if (key === "pre_call_estimate") return t === "true";
  if (t === "") return NULLABLE.has(key) ? null : undefined;
  if (key === "time_zone") return t;
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

/** An issue's field: `/plans/0/cost_rates/gpt-4o/input` and `/cost_rates/gpt-4o` both name `cost_rates`. */
function issuesByField(issues: Issue[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of issues) {
    const parts = i.path.split("/").filter(Boolean);
    const field = parts[0] === "plans" ? parts[2] : parts[0];
    if (field) out[field] = out[field] ? `${out[field]}; ${i.message}` : i.message;
  }
  return out;
}

export function PlansScreen() {
  const [params, set] = useUrlState();
  const editing = params.get("edit");
  const plans = useQuery({ queryKey: ["plans"], queryFn: () => ok(api.GET("/api/v1/config/plans")) });
  const subs = useQuery({ queryKey: ["plan-subscribers"], queryFn: () => ok(api.GET("/api/v1/analytics/plan-subscribers")) });
  const count = (name: string) => subs.data?.plans.find((s) => s.plan_name === name)?.subscriber_count;
  const plan = plans.data?.plans.find((p) => p.id === editing);
  return (
    <Screen title="Plans">
    <Card title="Plans">
      <Query q={plans} label="Loading plans">
        {(d) =>
          d.plans.length === 0 ? (
            <Empty>
              No plans yet. Create one below: a plan sets each user's caps, rates and gates. See the <QuickStart />.
            </Empty>
          ) : (
            <DataTable caption="Plans" columns={["Name", num("Subscribers"), num("Per period"), num("Per session"), num("Gates"), "Models priced", "Updated", { label: "Actions", hidden: true }]}>
              {d.plans.map((p) => (
                <tr key={p.id}>
                  <td>{p.name}</td>
                  <td className="num">{subs.error ? "?" : fmtInt(count(p.name) ?? 0)}</td>
                  <td className="num">{p.max_spend_per_period == null ? "unlimited" : fmtMoney(p.max_spend_per_period)}</td>
                  <td className="num">{p.max_spend_per_session == null ? "unlimited" : fmtMoney(p.max_spend_per_session)}</td>
                  <td className="num">
                    {Math.round(p.soft_gate_at * 100)}% / {Math.round(p.hard_gate_at * 100)}%
                  </td>
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
          )
        }
      </Query>
    </Card>
    {plan ? <PlanEditor key={plan.id} plan={plan} onDone={() => set({ edit: null })} /> : <PlanEditor key="new" onDone={() => {}} />}
    </Screen>
  );
}

function PlanEditor({ plan, onDone }: { plan?: Plan; onDone: () => void }) {
  const original = plan ? toForm(plan) : DEFAULTS;
  const [form, setForm] = useState<PlanForm>(original);
  const [saved, setSaved] = useState<string | null>(null);
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: async () => {
      if (plan) {
        // Only the fields that changed are sent: a PATCH changes exactly those.
        const body: Record<string, unknown> = {};
        for (const k of Object.keys(form) as (keyof PlanForm)[]) if (form[k] !== original[k]) body[k] = parse(k, form[k]);
        if (Object.keys(body).length === 0) return { name: plan.name, changed: 0 };
        const updated = await ok(api.PATCH("/api/v1/config/plans/{plan_id}", { params: { path: { plan_id: plan.id } }, body: body as never }));
        return { name: updated.name, changed: Object.keys(body).length };
      }
      const body = Object.fromEntries(Object.entries(form).map(([k, v]) => [k, parse(k, v)]).filter(([, v]) => v !== undefined));
      const created = await ok(api.POST("/api/v1/config/plans", { body: { plans: [body as PlanInput] } }));
      return { name: created.plans[0]?.name ?? form.name, changed: -1 };
    },
    onMutate: () => setSaved(null),
    onSuccess: (r) => {
      queryClient.invalidateQueries({ queryKey: ["plans"] });
      queryClient.invalidateQueries({ queryKey: ["plan-subscribers"] });
      setSaved(r.changed === -1 ? `Plan ${r.name} created.` : r.changed === 0 ? "Nothing changed." : `Plan ${r.name} saved (${r.changed} field${r.changed === 1 ? "" : "s"}).`);
      if (!plan) setForm(DEFAULTS);
    },
  });
  const err = save.error instanceof ApiError ? save.error : null;
  const issues = err ? issuesByField(err.issues) : {};
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
  const submit = submitted(() => {
    save.mutate();
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
          {text("limits", "Windows and rate limits (JSON)", 'Default []. e.g. [{"name": "daily", "metric": "spend", "max": 5, "window": "day"}]', "json")}
          {text("time_zone", "Time zone of calendar windows", 'Default UTC. An IANA name, e.g. "America/New_York".', "text")}
          <div className="field">
            <label className="check">
              <input type="checkbox" checked={form.pre_call_estimate === "true"} onChange={(e) => setForm({ ...form, pre_call_estimate: String(e.target.checked) })} /> Estimate before each call (pre_call_estimate, default off)
            </label>
            {issues.pre_call_estimate && <small className="field-error">{issues.pre_call_estimate}</small>}
          </div>
        </div>
        {err && !err.issues.length && <FormAlert>{err.status === 409 ? `A plan named ${form.name} exists already.` : err.message}</FormAlert>}
        {err && err.issues.length > 0 && <FormAlert>The API refused the plan ({err.status}): fix the fields marked above.</FormAlert>}
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
