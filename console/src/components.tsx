import { Fragment, useEffect, useId, useRef, useState, type FormEvent, type ReactNode } from "react";
import uPlot from "uplot";
import { Link } from "wouter";
import "uplot/dist/uPlot.min.css";
import { ApiError } from "./api/client.ts";
import { fmtGateAt, fmtPeriodBound, fmtTime, localTitle, utcTitle } from "./format.ts";

/** The quick start, a screen of the console (with this service's address in its commands). */
export const QuickStart = () => <Link href="/quickstart">quick start</Link>;

export function Time({ iso }: { iso: string | null | undefined }) {
  return iso ? (
    <time dateTime={iso} title={utcTitle(iso)}>
      {fmtTime(iso)}
    </time>
  ) : (
    <span>—</span>
  );
}

/** A billing period from `start` to `end` (exclusive), in UTC as the subscription form says it; each bound in the viewer's zone on hover. */
export function Period({ start, end }: { start: string; end: string }) {
  return (
    <>
      <time dateTime={start} title={localTitle(start)}>
        {fmtPeriodBound(start)}
      </time>{" "}
      →{" "}
      <time dateTime={end} title={localTitle(end)}>
        {fmtPeriodBound(end)}
      </time>{" "}
      (UTC)
    </>
  );
}

/** What is known of one thing, a term and its value a fact; a fact that does not apply (false, null) is left out. */
export function Facts({ facts }: { facts: (readonly [string, ReactNode] | false | null | undefined)[] }) {
  return (
    <dl className="facts">
      {facts.map(
        (f) =>
          f && (
            <Fragment key={f[0]}>
              <dt>{f[0]}</dt>
              <dd>{f[1]}</dd>
            </Fragment>
          ),
      )}
    </dl>
  );
}

export function Loading({ label = "Loading" }: { label?: string }) {
  return (
    <div className="state loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {label}…
    </div>
  );
}

/** A failed request; `retrying` when a read is being asked again by itself (an action never is: it says what failed). */
export function ErrorState({ error, retry, retrying }: { error: unknown; retry?: () => void; retrying?: boolean }) {
  const e = error instanceof ApiError ? error : new ApiError(0, String((error as Error)?.message ?? error));
  const unavailable = e.unavailable;
  return (
    <div className="state error" role="alert">
      <strong>{unavailable ? "The service is unavailable" : e.status === 404 ? "Not found" : `Request failed (${e.status || "network"})`}</strong>
      <span>{retrying ? "Retrying automatically…" : e.message}</span>
      {retry && (
        <button type="button" className="secondary" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state empty">{children}</div>;
}

/** What Query reads of a query (TanStack Query's result). */
export interface QueryState<T> {
  data?: T;
  error: unknown;
  failureReason?: unknown;
  isPending: boolean;
  refetch: () => unknown;
}

/** The loading, error and data states of one query, so that no screen ever goes blank. */
export function Query<T>({ q, children, label }: { q: QueryState<T>; children: (data: T) => ReactNode; label?: string }) {
  // While a 503 is being retried the query has no error yet: say so rather than spin.
  const unavailable = q.failureReason instanceof ApiError && q.failureReason.unavailable ? q.failureReason : null;
  if (q.data !== undefined)
    return (
      <>
        {unavailable && <ErrorState error={unavailable} retrying />}
        {children(q.data)}
      </>
    );
  if (q.error) return <ErrorState error={q.error} retry={() => q.refetch()} />;
  if (unavailable) return <ErrorState error={unavailable} retrying />;
  return <Loading label={label} />;
}

/**
 * A query whose data holds a list (`items` picks it): `empty` says what to do while the list has
 * none, `children` show it otherwise. A paged list (`pages`: its paging and its page's
 * next_cursor) may answer an empty page that is not the last (a filtered page reads a bounded
 * part of the data): that page says so and keeps the pager, as does an empty page reached by
 * paging, so that the pages after and before it stay in reach.
 */
export function ListQuery<T, I>({
  q,
  label,
  items,
  empty,
  children,
  pages,
}: {
  q: QueryState<T>;
  label: string;
  items: (data: T) => I[];
  empty: ReactNode;
  children: (list: I[], data: T) => ReactNode;
  /** `order`: "newest first" lists say "older pages", others "later pages". */
  pages?: { paging: PagingControls; next: (data: T) => string | null | undefined; order?: "newest first" };
}) {
  return (
    <Query q={q} label={label}>
      {(data) => {
        const list = items(data);
        if (list.length > 0) return children(list, data);
        const next = pages?.next(data);
        if (!pages || (!next && !pages.paging.hasPrev)) return <Empty>{empty}</Empty>;
        return (
          <>
            <Empty>{next ? `Nothing on this page; ${pages.order === "newest first" ? "older" : "later"} pages may hold more.` : empty}</Empty>
            <Pager paging={pages.paging} next={next} of={label.replace(/^Loading /, "")} />
          </>
        );
      }}
    </Query>
  );
}

export function Card({ title, children, actions, className }: { title?: string; children: ReactNode; actions?: ReactNode; className?: string }) {
  return (
    <section className={`card ${className ?? ""}`} aria-label={title}>
      {(title || actions) && (
        <header className="card-head">
          {title && <h2>{title}</h2>}
          {actions && <div className="actions">{actions}</div>}
        </header>
      )}
      {children}
    </section>
  );
}

/** Text field with its label and the API's complaint about it (a 422 issue) beside it. */
export function Field({ label, error, hint, children }: { label: string; error?: string; hint?: string; children: (id: string, describedBy?: string) => ReactNode }) {
  // React's ids carry characters CSS selectors would need escaped.
  const id = `f${useId().replace(/[^A-Za-z0-9_-]/g, "")}`;
  const described = [error ? `${id}-err` : "", hint ? `${id}-hint` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div className={`field ${error ? "invalid" : ""}`}>
      <label htmlFor={id}>{label}</label>
      {children(id, described)}
      {hint && (
        <small id={`${id}-hint`} className="hint">
          {hint}
        </small>
      )}
      {error && (
        <small id={`${id}-err`} className="field-error" role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

/** A copy button that says when it copied. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      className="secondary"
      onClick={async () => {
        await navigator.clipboard?.writeText(text).catch(() => {});
        setDone(true);
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}

/** A secret shown once, with a copy button and a warning. */
export function SecretOnce({ title, secret, warning }: { title: string; secret: string; warning: string }) {
  return (
    <div className="secret" role="region" aria-label={title}>
      <strong>{title}</strong>
      <p className="warning">{warning}</p>
      <div className="secret-row">
        <code aria-label={`${title} value`}>{secret}</code>
        <CopyButton text={secret} />
      </div>
    </div>
  );
}

const COLORS = ["#2563eb", "#d97706", "#059669", "#7c3aed", "#dc2626", "#0891b2", "#4b5563"];
export const color = (i: number) => COLORS[i % COLORS.length]!;

export interface Series {
  label: string;
  values: number[];
  color?: string;
  format?: (n: number) => string;
}

/** Bars per day (uPlot): one or more series over `dates` (YYYY-MM-DD, UTC days). */
export function DayChart({ title, dates, series, height = 180, stacked = false }: { title: string; dates: string[]; series: Series[]; height?: number; stacked?: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = dates.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
    // Stacked: each series is drawn as the sum of itself and those after it, first series
    // behind, so the later ones sit at the bottom of each bar.
    const drawn = stacked ? series.map((_, i) => dates.map((__, d) => series.slice(i).reduce((sum, s) => sum + (s.values[d] ?? 0), 0))) : series.map((s) => s.values);
    const bars = uPlot.paths.bars!({ size: [0.8, 60], align: 0 });
    const opts: uPlot.Options = {
      width: el.clientWidth || 300,
      height,
      legend: { show: false },
      cursor: { points: { show: false } },
      // The days are UTC days (the API's dates): labelled as such, not in the viewer's zone.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: "#4b5563", grid: { show: false }, ticks: { show: false } },
        { stroke: "#4b5563", grid: { stroke: "#eef0f3" }, ticks: { show: false }, size: 56, values: (_u, vals) => vals.map((v) => (series[0]?.format ? series[0].format(v) : String(v))) },
      ],
      series: [
        { value: (_u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)) },
        ...series.map((s, i) => ({
          label: s.label,
          fill: s.color ?? color(i),
          stroke: s.color ?? color(i),
          paths: bars,
          points: { show: false },
          value: (_u: uPlot, v: number | null, _si: number, d: number | null) => (v == null || d == null ? "" : s.format ? s.format(s.values[d] ?? 0) : String(s.values[d] ?? 0)),
        })),
      ],
    };
    const plot = new uPlot(opts, [xs, ...drawn] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [dates, series, height, stacked]);
  // Read aloud as the chart shows it ("Cost: $19.7061"), not as a float sum ("19.706094090999997").
  const summary = series.map((s) => `${s.label}: ${(s.format ?? String)(s.values.reduce((a, b) => a + b, 0))}`).join(", ");
  return (
    <div className="chart-box">
      <div className="chart" ref={box} role="img" aria-label={`${title} per day over ${dates.length} days (${summary})`} />
      {series.length > 1 && (
        <ul className="legend" aria-hidden="true">
          {series.map((s, i) => (
            <li key={s.label}>
              <span className="swatch" style={{ background: s.color ?? color(i) }} /> {s.label}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** Horizontal bars for shares (models, plans): label, bar and figure per row. */
export function BarList({ title, rows }: { title: string; rows: { label: string; value: number; text: string }[] }) {
  const max = Math.max(...rows.map((r) => r.value), 0) || 1;
  return (
    <ul className="barlist" aria-label={title}>
      {rows.map((r, i) => (
        <li key={r.label}>
          <span className="barlist-label">{r.label}</span>
          <span className="barlist-track" aria-hidden="true">
            <span className="barlist-bar" style={{ width: `${(r.value / max) * 100}%`, background: color(i) }} />
          </span>
          <span className="barlist-value">{r.text}</span>
        </li>
      ))}
    </ul>
  );
}

/** Usage against a cap, with the soft and hard gate marks; `reset` and `note` (what the cap is made of) under it, `blocking` when it is the dimension that blocks the user's calls. */
export function Gauge({ label, value, pct, state: decided, limit, soft, hard, format, reset, note, blocking }: { label: string; value: number; pct?: number; state?: "ok" | "soft" | "hard"; limit: number | null | undefined; soft: number; hard: number; format: (n: number) => string; reset?: ReactNode; note?: ReactNode; blocking?: boolean }) {
  const noteId = `n${useId().replace(/[^A-Za-z0-9_-]/g, "")}`;
  const unlimited = limit == null;
  // A cap of 0 blocks every call: the user is at the hard gate whatever they spent. `pct`, when
  // the API gave it, is the ratio the gates compare (value / limit in floats can fall short of it).
  const ratio = unlimited ? 0 : limit === 0 ? 1 : (pct ?? value / limit);
  const state = decided ?? (unlimited ? "ok" : ratio >= hard ? "hard" : ratio >= soft ? "soft" : "ok");
  const scale = Math.max(1, hard * 1.1, ratio);
  const pos = (r: number) => `${Math.min(100, (r / scale) * 100)}%`;
  return (
    <div className={`gauge gauge-${state}${blocking ? " gauge-blocking" : ""}`}>
      <div className="gauge-head">
        <span className="gauge-label">{label}</span>
        <span className="gauge-state">{unlimited ? "unlimited" : state === "hard" ? (blocking ? "Hard gate · blocks calls" : "Hard gate") : state === "soft" ? "Soft gate" : "OK"}</span>
      </div>
      <div
        className="gauge-track"
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={unlimited ? 0 : limit ?? 0}
        aria-valuenow={value}
        aria-valuetext={unlimited ? `${format(value)}, no limit` : `${format(value)} of ${format(limit!)} (${Math.round(ratio * 100)}%)`}
        aria-describedby={note ? noteId : undefined}
      >
        {!unlimited && <span className="gauge-fill" style={{ width: pos(ratio) }} />}
        {!unlimited && <span className="gauge-mark soft" style={{ left: pos(soft) }} title={`soft gate at ${fmtGateAt(soft)}`} />}
        {!unlimited && <span className="gauge-mark hard" style={{ left: pos(hard) }} title={`hard gate at ${fmtGateAt(hard)}`} />}
      </div>
      <div className="gauge-foot">
        <span>{format(value)}</span>
        <span>{unlimited ? "no cap" : `of ${format(limit!)} · soft ${fmtGateAt(soft)} · hard ${fmtGateAt(hard)}`}</span>
      </div>
      {reset && <div className="gauge-reset">{reset}</div>}
      {note && (
        <div id={noteId} className="gauge-note">
          {note}
        </div>
      )}
    </div>
  );
}

/** What a Pager moves: cursors kept in the URL's query (`usePaging`). */
export interface PagingControls {
  hasPrev: boolean;
  prev: () => void;
  next: (cursor: string) => void;
}

/** Previous / next page over cursors kept in the URL's query (`usePaging`); `next` is the page's next_cursor. */
export function Pager({ paging, next, of }: { paging: PagingControls; next: string | null | undefined; of?: string }) {
  // Named after its list: two lists on a screen are two navigation landmarks a screen reader tells apart.
  return (
    <nav className="pager" aria-label={of ? `Pages of ${of}` : "Pages"}>
      <button type="button" className="secondary" disabled={!paging.hasPrev} onClick={paging.prev}>
        ← Previous
      </button>
      <button type="button" className="secondary" disabled={!next} onClick={() => next && paging.next(next)}>
        Next →
      </button>
    </nav>
  );
}

/** A select's options, each showing its value unless `label` says otherwise. */
export function Options<V extends string | number>({ values, label = String }: { values: readonly V[]; label?: (value: V) => ReactNode }) {
  return (
    <>
      {values.map((v) => (
        <option key={v} value={v}>
          {label(v)}
        </option>
      ))}
    </>
  );
}

/** How many rows a page of a list shows, one of `sizes`. */
export function PerPage({ value, sizes, onChange }: { value: number; sizes: readonly number[]; onChange: (size: string) => void }) {
  return (
    <Field label="Per page">
      {(id) => (
        <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
          <Options values={sizes} />
        </select>
      )}
    </Field>
  );
}

/** A column of a DataTable: its header, right-aligned for numbers, or read only by screen readers. */
export type Column = string | { label: string; num?: boolean; hidden?: boolean };
export const num = (label: string): Column => ({ label, num: true });

/** A scrollable table with a caption for screen readers; `children` are its body rows. With `paging`, a Pager follows it. */
export function DataTable({ caption, columns, children, paging, next }: { caption: string; columns: Column[]; children: ReactNode } & Partial<Parameters<typeof Pager>[0]>) {
  const table = (
    <div className="table-wrap" tabIndex={0}>
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => {
              const col = typeof c === "string" ? { label: c } : c;
              return (
                <th key={col.label} scope="col" className={col.num ? "num" : undefined}>
                  {col.hidden ? <span className="sr-only">{col.label}</span> : col.label}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
  return paging ? (
    <>
      {table}
      <Pager paging={paging} next={next} of={caption} />
    </>
  ) : (
    table
  );
}

/** A screen of the console: its heading, under `crumbs` (the screen it belongs to) and with `actions` beside it, over its content. */
export function Screen({ title, crumbs, actions, children }: { title: string; crumbs?: ReactNode; actions?: ReactNode; children: ReactNode }) {
  const heading = <h1>{title}</h1>;
  return (
    <div className="screen">
      <div className="screen-head">
        {crumbs ? (
          <div>
            <p className="crumbs">{crumbs} /</p>
            {heading}
          </div>
        ) : (
          heading
        )}
        {actions}
      </div>
      {children}
    </div>
  );
}

/** A form's submit button, disabled and saying `busyLabel` while the submission runs. */
export function Submit({ busy, busyLabel, disabled, children }: { busy: boolean; busyLabel: string; disabled?: boolean; children: ReactNode }) {
  return (
    <button type="submit" disabled={busy || !!disabled}>
      {busy ? busyLabel : children}
    </button>
  );
}

/**
 * A form's submit that asks first: `label` ("Grant credits…") until the form is submitted once,
 * then the question with `yes` (the submit that sends) and a way back to the form. The form's
 * handler decides which submit it was by `confirming`.
 */
export function ConfirmedSubmit({ confirming, question, name, label, yes, busy, busyLabel, onBack }: { confirming: boolean; question: string; name: string; label: string; yes: string; busy: boolean; busyLabel: string; onBack: () => void }) {
  // The question takes the focus: a keyboard or screen-reader user lands on what is asked.
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (confirming) box.current?.focus();
  }, [confirming]);
  if (!confirming)
    return (
      <Submit busy={busy} busyLabel={busyLabel}>
        {label}
      </Submit>
    );
  return (
    <div className="confirm-box" role="group" aria-label={name} tabIndex={-1} ref={box}>
      <p>{question}</p>
      <div className="confirm">
        <Submit busy={busy} busyLabel={busyLabel}>
          {yes}
        </Submit>
        <button type="button" className="secondary" onClick={onBack}>
          Back to the form
        </button>
      </div>
    </div>
  );
}

/** A form's submit handler: the page stays put (no browser submission) and `fn` runs instead. */
export const submitted = (fn: () => unknown) => (e: FormEvent) => {
  e.preventDefault();
  void fn();
};

/** A one-line form (a filter, a setting) with a secondary submit button saying `button`. */
export function InlineForm({ button, onSubmit, children }: { button: string; onSubmit: () => unknown; children: ReactNode }) {
  return (
    <form className="inline" onSubmit={submitted(onSubmit)}>
      {children}
      <button type="submit" className="secondary">
        {button}
      </button>
    </form>
  );
}

/** A list's search by what its ids start with: `onSearch` gets the text trimmed, or null for no filter. */
export function PrefixSearch({ label, placeholder, prefix, onSearch }: { label: string; placeholder: string; prefix: string; onSearch: (prefix: string | null) => void }) {
  const [search, setSearch] = useState(prefix);
  return (
    <InlineForm button="Search" onSubmit={() => onSearch(search.trim() || null)}>
      <Field label={label}>
        {(id) => <input id={id} type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder={placeholder} />}
      </Field>
    </InlineForm>
  );
}

/** A form's error about its submission as a whole, read out at once. */
export const FormAlert = ({ children }: { children: ReactNode }) => (
  <p className="field-error" role="alert">
    {children}
  </p>
);

/**
 * A question asked before a change that cannot be taken back (`children`: the question). It takes
 * the focus when it appears, so that a keyboard or screen-reader user lands on what is asked.
 */
export function ConfirmBox({ name, yes, busyYes, busy, no, onYes, onNo, children }: { name: string; yes: string; busyYes: string; busy: boolean; no: string; onYes: () => void; onNo: () => void; children: ReactNode }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => box.current?.focus(), []);
  return (
    <div className="confirm-box danger" role="group" aria-label={name} tabIndex={-1} ref={box}>
      <p>{children}</p>
      <div className="confirm">
        <button type="button" className="danger" disabled={busy} onClick={onYes}>
          {busy ? busyYes : yes}
        </button>
        <button type="button" className="secondary" onClick={onNo}>
          {no}
        </button>
      </div>
    </div>
  );
}

/**
 * What a confirmed change did, where the focus lands: the control that asked for it went with what
 * it changed (a revoked key's row, a removed member's), and the focus would fall to the page's top.
 * Give it a `key` of its words so that a second such change takes the focus again.
 */
export function DoneStatus({ children }: { children: ReactNode }) {
  const p = useRef<HTMLParagraphElement>(null);
  useEffect(() => p.current?.focus(), []);
  return (
    <p role="status" className="ok-text" tabIndex={-1} ref={p}>
      {children}
    </p>
  );
}

/** A form's word that its submission went through. */
export const FormStatus = ({ children }: { children: ReactNode }) => (
  <p role="status" className="ok-text">
    {children}
  </p>
);
