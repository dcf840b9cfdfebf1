import { useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { ApiError, type Plan } from "../api/client.ts";
import { plansRead } from "../api/reads.ts";
import { Card, Field, FormAlert, FormStatus, Submit, submitted } from "../components.tsx";
import { useFieldIssues } from "../field-issues.ts";
import { atUtcMidnight, fmtExactMoney } from "../format.ts";

export interface SubscriptionBody {
  plan_id: string;
  period_start: string | null;
  period_end: string | null;
  billing_subscription_id: string | null;
}

/** The UTC day of an instant, as a date input holds it. */
const dateOnly = (iso: string) => new Date(iso).toISOString().slice(0, 10);
function thisMonthUtc(): [string, string] {
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return [dateOnly(start.toISOString()), dateOnly(end.toISOString())];
}

/** A period bound as the API is sent it: the current period's exact instant when the date input still holds its day, else that day's UTC midnight. */
function periodBound(date: string, current: string | null | undefined): string | null {
  if (!date) return null;
  return current && dateOnly(current) === date ? current : `${date}T00:00:00Z`;
}

/** An instant to the second in UTC, in ISO order: "2025-01-15 10:32:11 UTC" (milliseconds when it has them). */
const exactUtc = (iso: string) => new Date(iso).toISOString().replace("T", " ").replace(".000Z", "Z").replace("Z", " UTC");

/** What the form starts from: the owner's plan, its current period and its billing subscription id. */
export interface CurrentSubscription {
  plan_id: string | null;
  period: { start: string; end: string } | null;
  billing_subscription_id: string | null;
}

/**
 * A plan and billing period for a user or a team (the same rules on both): `current` prefills
 * the plan, the period's dates (else this calendar month, UTC) and the billing subscription id;
 * `save` sends the body and resolves the plan's name. A date left on the current period's day
 * sends the period's exact instant, so that keeping the dates keeps the period (and its spend)
 * even when it is not anchored at midnight; the billing subscription id is sent as the field holds it.
 */
export function SubscriptionForm({
  current,
  periodNote,
  save: send,
  onSaved,
}: {
  current: CurrentSubscription | undefined;
  /** Said under the dates when `current` has no period (why, and what the dates then are). */
  periodNote?: string;
  save: (body: SubscriptionBody) => Promise<{ plan_name: string | null }>;
  onSaved: () => void;
}) {
  const plans = useQuery(plansRead());
  const period = current?.plan_id && current.period ? current.period : null;
  const [defStart, defEnd] = period ? [dateOnly(period.start), dateOnly(period.end)] : thisMonthUtc();
  // null: not edited, the field shows what `current` says (which may arrive after the form).
  const [form, setForm] = useState<{ plan_id: string; start: string | null; end: string | null; billing: string | null }>({ plan_id: "", start: null, end: null, billing: null });
  const planId = form.plan_id || current?.plan_id || "";
  const start = form.start ?? defStart;
  const end = form.end ?? defEnd;
  const billing = form.billing ?? current?.billing_subscription_id ?? "";
  const plan: Plan | undefined = plans.data?.plans.find((x) => x.id === planId);
  const capped = plan?.max_spend_per_period != null;
  const rule = !plan ? "Pick a plan." : capped && (!start || !end) ? "This plan caps spend per period: both period dates are required." : start && end && end <= start ? "The period must end after it starts." : null;
  const save = useMutation({
    mutationFn: () =>
      send({
        plan_id: planId,
        period_start: periodBound(start, period?.start),
        period_end: periodBound(end, period?.end),
        billing_subscription_id: billing.trim() === "" ? null : billing,
      }),
    onSuccess: onSaved,
  });
  const err = save.error instanceof ApiError ? save.error : null;
  const issue = useFieldIssues(save.error, { plan_id: planId, period_start: start, period_end: end, billing_subscription_id: billing });
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
                  {x.name} {x.max_spend_per_period == null ? "(no period cap)" : `(${fmtExactMoney(x.max_spend_per_period)} per period)`}
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
        {period && !(atUtcMidnight(period.start) && atUtcMidnight(period.end)) && (
          <p className="hint">
            Current period: {exactUtc(period.start)} → {exactUtc(period.end)}. Dates left on its days are sent as these exact times, which keeps the period.
          </p>
        )}
        {!period && periodNote && <p className="hint">{periodNote}</p>}
        <p className="hint">Same dates as the current period keep its spend; new dates start a new period at $0.</p>
        <Field label="Billing subscription id (optional)" error={issue("billing_subscription_id")} hint={current?.billing_subscription_id ? "The stored id; emptied, the stored id is removed." : undefined}>
          {(fid, d) => <input id={fid} aria-describedby={d} value={billing} onChange={(e) => setForm({ ...form, billing: e.target.value })} />}
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
