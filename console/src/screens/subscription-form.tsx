import { useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { ApiError, type Plan } from "../api/client.ts";
import { plansRead } from "../api/reads.ts";
import { Card, Field, FormAlert, FormStatus, Submit, submitted } from "../components.tsx";
import { fmtMoney } from "../format.ts";

export interface SubscriptionBody {
  plan_id: string;
  period_start: string | null;
  period_end: string | null;
  billing_subscription_id: string | null;
}

const dateOnly = (iso: string) => iso.slice(0, 10);
function thisMonthUtc(): [string, string] {
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return [dateOnly(start.toISOString()), dateOnly(end.toISOString())];
}

/**
 * A plan and billing period for a user or a team (the same rules on both): `current` prefills
 * the plan and the period's dates (else this calendar month, UTC); `save` sends the body and
 * resolves the plan's name.
 */
export function SubscriptionForm({
  current,
  save: send,
  onSaved,
}: {
  current: { plan_id: string | null; period: { start: string; end: string } | null } | undefined;
  save: (body: SubscriptionBody) => Promise<{ plan_name: string | null }>;
  onSaved: () => void;
}) {
  const plans = useQuery(plansRead());
  const [defStart, defEnd] = current?.plan_id && current.period ? [dateOnly(current.period.start), dateOnly(current.period.end)] : thisMonthUtc();
  const [form, setForm] = useState<{ plan_id: string; start: string | null; end: string | null; billing: string }>({ plan_id: "", start: null, end: null, billing: "" });
  const planId = form.plan_id || current?.plan_id || "";
  const start = form.start ?? defStart;
  const end = form.end ?? defEnd;
  const plan: Plan | undefined = plans.data?.plans.find((x) => x.id === planId);
  const capped = plan?.max_spend_per_period != null;
  const rule = !plan ? "Pick a plan." : capped && (!start || !end) ? "This plan caps spend per period: both period dates are required." : start && end && end <= start ? "The period must end after it starts." : null;
  const save = useMutation({
    mutationFn: () =>
      send({
        plan_id: planId,
        period_start: start ? `${start}T00:00:00Z` : null,
        period_end: end ? `${end}T00:00:00Z` : null,
        billing_subscription_id: form.billing || null,
      }),
    onSuccess: onSaved,
  });
  const err = save.error instanceof ApiError ? save.error : null;
  const issue = (f: string) => err?.issues.find((i) => i.path === `/${f}`)?.message;
  const submit = submitted(() => {
    if (!rule) save.mutate();
  });
  return (
    <Card title="Change the subscription">
      <form onSubmit={submit} className="stack" aria-label="Change the subscription">
        <Field label="Plan" error={issue("plan_id")}>
          {(fid, d) => (
            <select id={fid} aria-describedby={d} value={planId} onChange={(e) => setForm({ ...form, plan_id: e.target.value })} required>
              <option value="">Choose a plan…</option>
              {plans.data?.plans.map((x) => (
                <option key={x.id} value={x.id}>
                  {x.name} {x.max_spend_per_period == null ? "(no period cap)" : `(${fmtMoney(x.max_spend_per_period)} per period)`}
                </option>
              ))}
            </select>
          )}
        </Field>
        {plans.data?.plans.length === 0 && (
          <p className="muted">
            No plans yet: <Link href="/plans">create one</Link> first.
          </p>
        )}
        <div className="row">
          <Field label={`Period start (UTC)${capped ? "" : ", optional"}`} error={issue("period_start")}>
            {(fid, d) => <input id={fid} aria-describedby={d} type="date" value={start} onChange={(e) => setForm({ ...form, start: e.target.value })} />}
          </Field>
          <Field label={`Period end, exclusive (UTC)${capped ? "" : ", optional"}`} error={issue("period_end")}>
            {(fid, d) => <input id={fid} aria-describedby={d} type="date" value={end} onChange={(e) => setForm({ ...form, end: e.target.value })} />}
          </Field>
        </div>
        <p className="hint">Same dates as the current period keep its spend; new dates start a new period at $0.</p>
        <Field label="Billing subscription id (optional)" error={issue("billing_subscription_id")}>
          {(fid, d) => <input id={fid} aria-describedby={d} value={form.billing} onChange={(e) => setForm({ ...form, billing: e.target.value })} />}
        </Field>
        {(rule || (err && !err.issues.length)) && plan !== undefined && <FormAlert>{rule ?? err?.message}</FormAlert>}
        {save.isSuccess && <FormStatus>Subscription saved: {save.data.plan_name}.</FormStatus>}
        <Submit busy={save.isPending} busyLabel="Saving…" disabled={!!rule}>
          Save subscription
        </Submit>
      </form>
    </Card>
  );
}
