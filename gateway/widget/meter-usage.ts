// <meter-usage token="<portal token>" [base-url="https://meter.example.com/api/v1"]>: an end
// user's bars, resets and balance from GET /portal/me, for any page, with no framework. Built into
// gateway/widget/dist/widget.js (build.ts) and served at /api/v1/portal/widget.js.
// Numbers and dates are formatted in the viewer's locale and time zone (Intl). Its look follows
// CSS custom properties set on the element or any ancestor (listed in STYLE below).

interface Dimension {
  reason: string;
  name: string | null;
  metric: string;
  window: string;
  duration_minutes: number | null;
  model: string | null;
  max: number;
  used: number;
  pct: number;
  soft_gate_at: number;
  hard_gate_at: number;
  resets_at: string | null;
}

interface PortalMe {
  user_id: string;
  plan: string;
  billing_period: { start: string; end: string };
  limits: Dimension[];
  credits: { balance: number } | null;
  usage: { period_cost: number; period_tokens_total: number; by_model: { model: string; cost: number; tokens: number }[] };
}

/** How often the element reads /portal/me again on its own. */
const REFRESH_MS = 60_000;

// Where this script was loaded from: the API base is the same, unless base-url says otherwise.
const SCRIPT_SRC = (document.currentScript as HTMLScriptElement | null)?.src ?? "";
const DEFAULT_BASE = SCRIPT_SRC.replace(/\/portal\/widget\.js(?:[?#].*)?$/, "");

const STYLE = `
:host{display:block;font:var(--meter-usage-font,14px/1.45 system-ui,sans-serif);color:var(--meter-usage-color,#1f2937);background:var(--meter-usage-background,#fff);border:var(--meter-usage-border,1px solid #d1d5db);border-radius:var(--meter-usage-radius,8px);padding:var(--meter-usage-padding,16px);max-width:var(--meter-usage-max-width,480px)}
:host([hidden]){display:none}
h2{font-size:1.1em;margin:0 0 12px}
ul{list-style:none;margin:0;padding:0}
li{margin:0 0 14px}
.row{display:flex;justify-content:space-between;gap:8px;flex-wrap:wrap}
.label{font-weight:600}
.track{height:var(--meter-usage-bar-height,10px);background:var(--meter-usage-track,#e5e7eb);border-radius:999px;overflow:hidden;margin:4px 0}
.fill{height:100%;background:var(--meter-usage-bar,#2563eb);border-radius:999px}
.fill.warn{background:var(--meter-usage-bar-warn,#b45309)}
.fill.full{background:var(--meter-usage-bar-full,#b91c1c)}
.muted{color:var(--meter-usage-muted,#4b5563);font-size:.9em}
.balance{display:flex;justify-content:space-between;border-top:1px solid var(--meter-usage-track,#e5e7eb);padding-top:10px;margin-top:4px}
.balance strong{font-size:1.1em}
`;

const WINDOW_WORDS: Record<string, string> = {
  minute: "this minute",
  hour: "this hour",
  day: "today",
  week: "this week",
  month: "this month",
  period: "this billing period",
  session: "this session",
};

function label(d: Dimension): string {
  const what = d.metric === "spend" ? "Spend" : d.metric === "tokens" ? "Tokens" : "Requests";
  const model = d.model ? ` on ${d.model}` : "";
  const when = d.window === "rolling" ? `in the last ${rolling(d.duration_minutes ?? 0)}` : (WINDOW_WORDS[d.window] ?? d.window);
  const name = d.name ? ` (${d.name})` : "";
  // A team's dimension counts every member's usage: said, so that a member does not read it as its own.
  const team = d.reason.startsWith("team:") ? "Team · " : "";
  return `${team}${what}${model} ${when}${name}`;
}

/**
 * The bars worth drawing: not a session cap, which the client library counts per session of
 * its own (the service's view of it is always 0).
 */
const shown = (limits: Dimension[]) => limits.filter((d) => d.window !== "session");

function rolling(minutes: number): string {
  if (minutes % 1440 === 0) return minutes === 1440 ? "day" : `${minutes / 1440} days`;
  if (minutes % 60 === 0) return minutes === 60 ? "hour" : `${minutes / 60} hours`;
  return `${minutes} minutes`;
}

export class MeterUsage extends HTMLElement {
  static get observedAttributes() {
    return ["token", "base-url"];
  }

  /** The last answer of /portal/me, once one arrived. */
  data: PortalMe | null = null;
  private timer: ReturnType<typeof setInterval> | undefined;
  private inFlight: Promise<void> | undefined;
  /** The token and base the load in flight reads with. */
  private inFlightKey: string | undefined;
  private readonly root: ShadowRoot;

  constructor() {
    super();
    this.root = this.attachShadow({ mode: "open" });
    this.root.innerHTML = `<style>${STYLE}</style><section part="panel" aria-live="polite" aria-busy="true"><p class="muted">Loading usage…</p></section>`;
  }

  connectedCallback() {
    void this.refresh();
    this.schedule();
  }

  disconnectedCallback() {
    this.unschedule();
  }

  /** A token set or changed (also one set after the element was placed) is read at once, and the minute's reads resume. */
  attributeChangedCallback(_name: string, old: string | null, value: string | null) {
    if (old === value || !this.isConnected) return;
    void this.refresh();
    this.schedule();
  }

  /** Reads /portal/me now and renders it; resolves once rendered (a failure renders its message). */
  refresh(): Promise<void> {
    const key = `${this.getAttribute("token") ?? ""}\n${this.getAttribute("base-url") ?? ""}`;
    if (this.inFlight && this.inFlightKey === key) return this.inFlight;
    // A token changed while a read was in flight: read again with it once that one is done.
    const run: Promise<void> = (this.inFlight ?? Promise.resolve()).then(() => this.load()).finally(() => {
      if (this.inFlight === run) this.inFlight = this.inFlightKey = undefined;
    });
    this.inFlight = run;
    this.inFlightKey = key;
    return run;
  }

  private schedule() {
    this.timer ??= setInterval(() => void this.refresh(), REFRESH_MS);
  }

  private unschedule() {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async load(): Promise<void> {
    const token = this.getAttribute("token");
    if (!token) return this.fail("No usage token was given.");
    const base = (this.getAttribute("base-url") ?? DEFAULT_BASE).replace(/\/+$/, "");
    let res: Response;
    try {
      res = await fetch(`${base}/portal/me`, { headers: { authorization: `Bearer ${token}` }, credentials: "omit", cache: "no-store" });
    } catch {
      return this.fail("Usage could not be loaded; it will be tried again shortly.");
    }
    if (res.status === 401) {
      // An expired or revoked token stays so: asking every minute would only add failures (which
      // the API counts against the page's address). A new token, or refresh(), reads again.
      this.unschedule();
      return this.fail("This usage view has expired. Reload the page to see your usage.");
    }
    if (res.status === 429) return this.fail("Usage was asked for too often; it will be shown again shortly.");
    if (!res.ok) return this.fail("Usage could not be loaded; it will be tried again shortly.");
    this.data = (await res.json()) as PortalMe;
    this.render(this.data);
    this.dispatchEvent(new CustomEvent("meter-usage-load", { detail: this.data }));
  }

  private fail(message: string) {
    const panel = this.panel();
    panel.replaceChildren(el("p", { role: "alert" }, message));
    panel.setAttribute("aria-busy", "false");
    this.dispatchEvent(new CustomEvent("meter-usage-error", { detail: { message } }));
  }

  private panel(): HTMLElement {
    return this.root.querySelector("section")!;
  }

  private render(me: PortalMe) {
    // As the gates decide (rules' gateState; this script bundles nothing): money in whole
    // nano-dollars, a cap of 0 always full. The rounded pct would call $9.9999996 of $10 full.
    const nano = (n: number) => Math.round(n * 1e9);
    const atMark = (d: Dimension, at: number) =>
      d.max === 0 || (d.metric === "spend" ? nano(d.used) >= Math.round(at * nano(d.max)) : d.used >= at * d.max - d.max * 1e-9);
    // Exact to the nano-dollar the service keeps: a balance of $0.004 is not "$0.00".
    const money = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 9 });
    const count = new Intl.NumberFormat();
    const percent = new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 0 });
    const when = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    const amount = (d: Dimension, n: number) => (d.metric === "spend" ? money.format(n) : count.format(n));

    const heading = el("h2", { id: "meter-usage-title" }, me.plan === "none" ? "Your usage" : `Your usage: ${me.plan} plan`);
    const list = el("ul", { "aria-labelledby": "meter-usage-title" });
    const limits = shown(me.limits);
    for (const d of limits) {
      const name = label(d);
      const pct = Math.max(0, Math.min(1, d.pct));
      const fill = el("div", { class: `fill${atMark(d, d.hard_gate_at) ? " full" : atMark(d, d.soft_gate_at) ? " warn" : ""}` });
      fill.style.width = `${(pct * 100).toFixed(1)}%`;
      const text = `${amount(d, d.used)} of ${amount(d, d.max)}`;
      const bar = el("div", {
        class: "track",
        role: "progressbar",
        "aria-label": name,
        "aria-valuemin": "0",
        "aria-valuemax": "100",
        "aria-valuenow": String(Math.round(pct * 100)),
        "aria-valuetext": `${text} (${percent.format(d.pct)})`,
      });
      bar.append(fill);
      const reset = d.resets_at ? `Resets ${when.format(new Date(d.resets_at))}` : "";
      list.append(
        el("li", { "data-reason": d.reason }, el("div", { class: "row" }, el("span", { class: "label" }, name), el("span", {}, `${text} · ${percent.format(d.pct)}`)), bar, el("div", { class: "muted" }, reset)),
      );
    }
    const parts: Node[] = [heading];
    if (limits.length > 0) parts.push(list);
    else parts.push(el("p", { class: "muted" }, `${money.format(me.usage.period_cost)} spent this billing period; no limits apply.`));
    if (me.credits) {
      parts.push(el("p", { class: "balance", "data-part": "balance" }, el("span", {}, "Credit balance"), el("strong", {}, money.format(me.credits.balance))));
    }
    const panel = this.panel();
    panel.replaceChildren(...parts);
    panel.setAttribute("aria-busy", "false");
  }
}

function el(tag: string, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

if (!customElements.get("meter-usage")) customElements.define("meter-usage", MeterUsage);
