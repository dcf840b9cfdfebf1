// A dimension (BUDGETS.md §2) as the console draws it on a user's and a team's page: a bar
// against its cap with the gates, its reset ticking on an open page, its label saying whose it is.
import { useEffect, useState, type ReactNode } from "react";
import { Gauge } from "./components.tsx";
import { fmtTime, utcTitle } from "./format.ts";
import { dimensionLabel, fmtMetric, resetText, stateOf, untilNextReset, type Dimension } from "./limits.ts";

/** The viewer's clock, ticking every `ms`, so that "resets in …" stays true on an open page. */
export function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/** A dimension's reset ("resets in 3 h 20 min"), its local and UTC time on hover. */
export function Reset({ d, now }: { d: Dimension; now: number }) {
  const text = resetText(d, now);
  return d.resets_at ? (
    <time dateTime={d.resets_at} title={`${fmtTime(d.resets_at)} · ${utcTitle(d.resets_at)}`}>
      {text}
    </time>
  ) : (
    <span>{text}</span>
  );
}

/** A react-query refetchInterval: a window that resets empties its bar, so read again then (a reset already past: once a minute). */
export const untilResetRefetch = (q: { state: { data?: { limits: readonly Dimension[] } } }) => {
  const ms = q.state.data ? untilNextReset(q.state.data.limits, Date.now()) : null;
  return ms == null ? false : ms === 0 ? 60_000 : Math.min(ms + 1_000, 2 ** 31 - 1);
};

/** One dimension as a bar with its reset; `value` and `label` replace the dimension's own when given. */
export function DimensionBar({ d, now, label, value, note, blocking }: { d: Dimension; now: number; label?: string; value?: number; note?: ReactNode; blocking?: boolean }) {
  return (
    <Gauge
      label={label ?? dimensionLabel(d)}
      value={value ?? d.used}
      // The service's ratio (rounded to 1e-6) for the bar; its state as the gates decide it ($9.9999996 of $10 is pct 1, not blocked).
      pct={value === undefined ? d.pct : undefined}
      state={value === undefined ? stateOf(d) : undefined}
      limit={d.max}
      soft={d.soft_gate_at}
      hard={d.hard_gate_at}
      format={fmtMetric(d.metric)}
      reset={<Reset d={d} now={now} />}
      note={note}
      blocking={blocking}
    />
  );
}
