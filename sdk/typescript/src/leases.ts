/**
 * Budget leases (`leases: true`): the user's period spend cap, per-model token caps and the
 * windows of the plan's `limits` are spent from slices the service grants to this process, so
 * that many replicas together never pass them, with no request per call: a call runs only when
 * every slice it touches covers it. See docs/concurrency-and-leases.md, "Budget leases".
 */
import { randomUUID } from "node:crypto";
import { MeterApiError } from "./errors.ts";
import { own } from "./own.ts";
import { addDollars, dimensionKey, hardMarkOf, limitReason, memberScoped, ratio, resetsOf, teamLimitReason, toDollars, toNano, usedOf, type LimitCounter, type PlanLimit } from "./rules/index.ts";
import type { PlanConfig } from "./types.ts";
import type { Transport } from "./transport.ts";
import type { UserEntry } from "./state.ts";
import type { TeamEntry } from "./team-state.ts";
import type { Hold, LeasePeriods, ReservationAmount, WindowNeed } from "./reservation.ts";
import type { GuardResult } from "./types.ts";

/** While failing open, how often a call asks again whether the service answers (ms). */
const OPEN_RETRY_MS = 1_000;
/** Waits of a call for other members' requests asking for the team's slice, beside its own rounds (Leases.waitFor). */
const TEAM_WAITS = 2;
/**
 * Round trips' worth of the measured spend rate a slice keeps in hand: below it the next slice
 * is asked for in the background, so that it arrives before the one held runs out even when a
 * round trip takes a few times its usual time.
 */
const LOOKAHEAD = 3;
/**
 * The shortest round trip planned for (ms): a lease request that takes up to this long, when
 * requests usually answer in milliseconds, still finds the slice covering the calls meanwhile.
 */
const MIN_HORIZON_MS = 1_000;
/**
 * Until a spend rate is measured (RATE_TAU_MS of spending) and while the service grants in
 * full what is asked (far from the cap), a request asks for at least what the calls in flight
 * or waiting would spend in a planned round trip (horizon()) if each took this long (ms). The
 * calls in flight are then the only measure of how fast the slice will go, and a first slice
 * that runs dry before the next request answers makes every call in flight wait for it; the
 * service's share still bounds what is granted (ingestion README, "Budget leases"). 8 ms: a
 * tool call or a cached answer is that short, and a replica whose calls are longer asks for
 * more than it spends only until its rate is measured (20 ms let 100 calls of 2-10 ms run dry
 * before the second grant came: `npm run bench:leases`, docs/benchmarks.md).
 */
const MIN_CALL_MS = 8;
/**
 * While the service grants in full, each grant that finds calls waiting (the slice ran dry
 * before it came) doubles what the next requests ask for, up to this factor: the measured
 * rate lags a replica's start, and each request it sizes too small costs a round trip.
 */
const MAX_BOOST = 8;
/** Time constant of the spend-rate average (ms): recent calls weigh most, a pause fades out. */
const RATE_TAU_MS = 2_000;
/** A young rate is taken over at least this long (ms): a burst of concurrent first calls is not a rate. */
const RATE_MIN_WINDOW_MS = 100;
/**
 * A slice holding more than SPARE_ABOVE planned round trips of its spend rate offers the part
 * beyond SPARE_KEEP of them back with its next request (`spare`; the service takes only what the
 * lease holds beyond an equal share): replicas whose first requests the service did not
 * gather are granted the cap in the order they ask, and the first ones would otherwise sit for
 * seconds on what the last ones run short of. What is offered is not spent until the answer
 * comes: two round trips kept cover the offer's own, even one that takes twice as long as
 * planned (`npm run bench:leases`: keeping one, calls waited for offers that took 1.2 s). A
 * team's spend slice and its slice of a model's team token cap are offered the same way
 * (`team.spare`, `team.spare_tokens`): the holders serving every member of the team share its caps.
 */
const SPARE_ABOVE = 3;
const SPARE_KEEP = 2;

/** When the service cannot be asked: spend only what the slice holds, or fail open. */
export type LeaseFallback = "slice" | "open";

export interface LeaseSettings {
  /** Lease lifetime asked for (ms); the lease is spent only until then. */
  ttlMs: number;
  /** Calls' worth (of a slice's unit) asked for per request; before a unit is known, the cap / this. */
  callsPerLease: number;
  /** A lease unused this long (ms) is given back. */
  idleMs: number;
  fallback: LeaseFallback;
}

interface TokenLeaseWire {
  model: string;
  granted: number;
  added: number;
  /** What the cap has left for every holder after this answer (never below 0). */
  remaining: number;
  /** Absent from a service that takes nothing back. */
  returned?: number;
}

interface WindowLeaseWire {
  dimension: string;
  limited: boolean;
  window_start: string | null;
  granted: number;
  added: number;
  remaining: number;
  holders: number;
}

interface LeaseWire {
  lease_id: string;
  granted: number;
  added: number;
  /** What the cap has left for every holder after this answer (never below 0). */
  remaining: number;
  /** Taken back of what the request offered (absent from a service that takes nothing back). */
  returned?: number;
  ttl_ms: number;
  period_end: string;
  spend_limited: boolean;
  tokens: TokenLeaseWire | null;
  /** Absent from a service without window leases. */
  windows?: WindowLeaseWire[];
  /** The team slice (absent from a service without team leases; null when none was asked). */
  team?: TeamLeaseWire | null;
  /** One per member-scope window asked for (absent from a service without them). */
  member_windows?: WindowLeaseWire[];
}

interface TeamLeaseWire {
  team_id: string;
  spend_limited: boolean;
  granted: number;
  added: number;
  remaining: number;
  holders: number;
  /** Dollars taken back from the slice by this request (of what it offered; absent from a service that takes nothing back). */
  returned?: number;
  period_end: string;
  /** One per team window asked for (absent from a service without team window leases). */
  windows?: WindowLeaseWire[];
  /** The slice of the team's token cap of the model asked for (absent or null: none). */
  tokens?: TokenLeaseWire | null;
}

/** One budget of a lease: dollars, or one model's tokens. */
class Slice {
  /** The cap (times hard_gate_at) of the plan the client knew when the request that granted it was sent. */
  cap = Infinity;
  /** Granted by the service to this holder in the period (all grants). */
  granted = 0;
  /** Taken from it: holds of calls in flight and the usage of finished calls. */
  used = 0;
  /** An answer told what the holder holds of it (adopted(): what a shared holder held before counts as used). */
  answered = false;
  /** Largest call estimate seen. */
  estimate = 0;
  /** Largest amount one finished call took (its real usage, spend()). */
  largest = 0;
  /** Estimates taken, decayed with RATE_TAU_MS; when the first and the last were taken. */
  private decayed = 0;
  private firstAt = 0;
  private lastAt = 0;

  /** The model whose tokens this is, or null for dollars. */
  constructor(readonly model: string | null) {}

  /**
   * The unit of what is asked for: the largest call estimate seen, else the largest amount a
   * finished call took (calls estimated at 0: a plan without cost rates, whose calls' cost is
   * known only once they ran); 0 while neither is known (the first slice is then a share of
   * the cap, asked()).
   */
  get unit(): number {
    return this.estimate > 0 ? this.estimate : this.largest;
  }

  /** A finished call took `amount` from the slice (added to `used` by the caller). */
  finished(amount: number): void {
    if (amount > this.largest) this.largest = amount;
  }

  took(amount: number, now: number): void {
    if (this.firstAt === 0) this.firstAt = now;
    this.decayed = this.decayed * Math.exp(-Math.max(0, now - this.lastAt) / RATE_TAU_MS) + amount;
    this.lastAt = now;
  }

  /** How long estimates have been taken (ms; 0 before the first). */
  age(now: number): number {
    return this.firstAt === 0 ? 0 : now - this.firstAt;
  }

  /** Estimates taken per ms lately (the decayed sum, corrected for how long it has been summed). */
  rate(now: number): number {
    if (this.firstAt === 0) return 0;
    const window = Math.max(RATE_MIN_WINDOW_MS, now - this.firstAt);
    return (this.decayed * Math.exp(-Math.max(0, now - this.lastAt) / RATE_TAU_MS)) / (RATE_TAU_MS * (1 - Math.exp(-window / RATE_TAU_MS)));
  }
}

/** A finished call's usage taken from a slice of tokens or of a window (whole numbers). */
function finished(s: Slice, amount: number): void {
  s.used += amount;
  s.finished(amount);
}

/** A finished call's cost taken from a book's spend slice (exact dollars), and its tokens from the model's slice. */
function spentFrom(book: { spend: Slice; tokens: Map<string, Slice> }, cost: number, model: string | null, tokens: number): void {
  book.spend.used = addDollars(book.spend.used, cost);
  book.spend.finished(cost);
  const t = model === null ? undefined : book.tokens.get(model);
  if (t) finished(t, tokens);
}

/** A slice of one window of a plan limit (amounts in the limit's unit: nano-dollars, tokens, requests). */
class WindowSlice extends Slice {
  /** The lease's slice is spent only until then: the time the request that last added to it was sent plus the lifetime. */
  deadline = 0;
  /** No request asks for this window before then (the service had nothing left of it). */
  retryAt = 0;
  /** What the service had left of the window for others when it last refused more (the slice's unit): a smaller call may still ask. */
  leftAtService = Infinity;
  /** Until then the service said the plan has no limit of this dimension. */
  unlimitedUntil = 0;

  constructor(
    readonly key: string,
    readonly dimension: string,
    /** Calendar and period windows: the window's bounds (epoch ms); rolling: null and Infinity. */
    readonly start: number | null,
    readonly end: number,
  ) {
    super(null);
  }
}


/**
 * Records what an answer says the holder holds of a slice in all (`granted`, `added` by it) where
 * the holder is shared with books before this one (a team member's book made again after its
 * user's was forgotten, a team's): at the slice's first answer, what the holder held before
 * the grant was such a book's, given back as what it used (or granted under a request whose
 * answer was lost), and counts as used here. Only what is added is spent; a release gives back
 * only slices answered so (a release of none would set the holder's slice to what this book
 * alone used). Amounts in the slice's unit.
 */
function adopted(b: Book | TeamBook, s: Slice, granted: number, added: number): void {
  if (!b.shared || s.answered) return;
  s.used = s === b.spend ? addDollars(s.used, addDollars(granted, -added)) : s.used + granted - added;
  s.granted = granted;
  s.answered = true;
}

/** A release names the slice: an answer told what a shared holder holds of it (adopted()). */
function told(b: Book | TeamBook, s: Slice): boolean {
  return !b.shared || s.answered;
}

/** The slice of a window kept in `slices`, made on first use. */
function windowSlice(slices: Map<string, WindowSlice>, w: WindowNeed): WindowSlice {
  let s = slices.get(w.key);
  if (!s) {
    s = new WindowSlice(w.key, w.dimension, w.start, w.end);
    slices.set(w.key, s);
  }
  return s;
}

const NO_WINDOWS: WindowNeed[] = [];
/** Dimension keys of limits, computed once per limit object (plans are replaced whole on a change). */
const dimensions = new WeakMap<PlanLimit, string>();
function dimensionOf(l: PlanLimit): string {
  let d = dimensions.get(l);
  if (d === undefined) dimensions.set(l, (d = dimensionKey(l)));
  return d;
}

/** What a call needs from the lease: dollars, and tokens of its model when the plan caps them. */
export interface LeaseNeed {
  cost: number;
  /** Normalized model whose tokens the plan caps, else null. */
  model: string | null;
  tokens: number;
  /**
   * The lease must hold all of it (a pre-call estimate); else (a typical call, the default) the
   * call is covered while the lease holds anything, and takes its amount from it all the same.
   */
  whole: boolean;
  /** The windows of the plan's limits the call counts in (each must cover it). */
  windows: WindowNeed[];
  /** The user's own period spend cap is leased (its slice must cover `cost`). */
  spend: boolean;
  /** The member's team whose period spend cap or team-scope windows are leased, else null. */
  team: TeamEntry | null;
  /** The team's period spend cap is leased: its slice must cover `teamCost`. */
  teamSpend: boolean;
  teamCost: number;
  /** The windows of the team plan's team-scope limits the call counts in (each slice must cover it). */
  teamWindows: WindowNeed[];
  /** The windows of the team plan's member-scope limits (the member's own) the call counts in. */
  memberWindows: WindowNeed[];
  /** The model whose tokens the team plan caps (its slice must cover `teamTokens`), else null. */
  teamModel: string | null;
  teamTokens: number;
}

/** What sizes a lease's requests: the calls holding on it and the round trips of its requests. */
class Sizing {
  /** Round trips of lease requests (ms): smoothed, their mean deviation, and a peak that fades. */
  srtt = 0;
  rttvar = 0;
  peakRtt = 0;
  rtts = 0;
  holds = 0;
  /**
   * No request offers what the slices hold beyond their needs (spare) before then, and the
   * pause after an offer the service took nothing of (doubled each time, up to the renewal
   * margin): a replica alone, or one whose share nobody needs, is not asked again and again.
   */
  spareAt = 0;
  spareGap = RATE_MIN_WINDOW_MS;
  /** False once the service granted less than a request asked (its share near the cap): requests are then sized by the spend rate alone. */
  full = true;
  /** What requests ask for is multiplied by this (doubled after each dry spell while grants are full). */
  boost = 1;
  /**
   * Plan or subscription changes seen (renew(): a user's, or of a team, its subscription or a
   * member), how many had been seen when the request behind the last grant was sent, and the
   * last request (carrying a team's ask, for a team): while they differ the slices may have been
   * granted under caps no longer in force.
   */
  epoch = 0;
  grantEpoch = 0;
  askedEpoch = 0;
}

/**
 * This process's slices of one team's period spend cap and team-scope windows, shared by every
 * member of the team it serves (the service keeps one slice per holder beside the team's
 * counts). Asked for with a member's lease request, one request carrying it at a time.
 */
class TeamBook extends Sizing {
  readonly spend = new Slice(null);
  /** Window slices by key (WindowNeed.key); a calendar window's goes once it ended. */
  readonly windows = new Map<string, WindowSlice>();
  /** For the request being prepared: the most a waiting call needs of each window. */
  windowNeeds = new Map<string, number>();
  /** A slice (spend or window) was granted once: calls' events name the holder. */
  leased = false;
  /** Slices of the team's token caps by normalized model. */
  readonly tokens = new Map<string, Slice>();

  window(w: WindowNeed): WindowSlice {
    return windowSlice(this.windows, w);
  }

  slice(model: string): Slice {
    let s = this.tokens.get(model);
    if (!s) this.tokens.set(model, (s = new Slice(model)));
    return s;
  }
  /** Spend from the slice stops here: the time the request that last added to it was sent plus the lifetime. */
  deadline = 0;
  periodEndMs = 0;
  lastUse = 0;
  /** The request carrying this team's ask, else null. */
  asking: Promise<void> | null = null;
  /** No request asks for the team's slice before then: the service had nothing left of the cap. */
  retryAt = 0;
  /** Until then the service said the team has no period spend cap (or the user left it). */
  unlimitedUntil = 0;
  /** The member whose request last carried the ask: the slice is given back through its lease. */
  via: string | null = null;
  constructor(
    readonly teamId: string,
    /** The team's view (the team plan, its period), replaced when the team is loaded again. */
    public entry: TeamEntry,
    /** Under this process's holder id, which team books before this one may have held slices under (Leases.adopted()). */
    readonly shared: boolean,
  ) {
    super();
  }
}

/** One user's lease held by this process. */
class Book extends Sizing {
  leaseId: string | null = null;
  /** Calls in wait() for this book's request: the book stays while any does. */
  waits = 0;
  readonly spend = new Slice(null);
  /** Token slices by normalized model. */
  readonly tokens = new Map<string, Slice>();
  /** Window slices by key (WindowNeed.key); a calendar window's goes once it ended. */
  readonly windows = new Map<string, WindowSlice>();
  /** For the request being prepared: the most a waiting call needs of each window. */
  windowNeeds = new Map<string, number>();
  /** The same for the member-scope windows of the user's team plan (the user's own, capped by the team plan). */
  readonly memberWindows = new Map<string, WindowSlice>();
  memberWindowNeeds = new Map<string, number>();
  /** Spend from the lease stops here: the time the request was sent plus the lifetime. */
  deadline = 0;
  periodEndMs = 0;
  /** Until then the service said the user has nothing capped (nothing to lease); asked again after. */
  unlimitedUntil = 0;
  /** True while the service is unreachable and the fallback is "open". */
  open = false;
  lastUse = 0;
  /** When the last request was sent. */
  askedAt = 0;
  /** When the first request whose answer never came (since the last grant) was sent, else 0. */
  lostAt = 0;
  /** Calls waited for a request since the last grant, while a lease was held. */
  starved = false;
  /** The request being prepared or in flight (one at a time), and whether it has been sent. */
  asking: Promise<void> | null = null;
  sent = false;
  /** For the request being prepared: the model whose tokens it asks for, and the calls waiting on it (how many, the most one needs). */
  model: string | null = null;
  waiting = 0;
  needCost = 0;
  needTokens = 0;
  /** For the request being prepared: the most a waiting call needs of the team's slice, and of its token slice of `teamModel`. */
  needTeam = 0;
  teamModel: string | null = null;
  needTeamTokens = 0;
  /** The team whose ask the request in flight carries, else null. */
  teamAsked: TeamBook | null = null;
  /** Whether the last request sent carried the team's ask (another member's may have carried it instead). */
  askedTeam = false;
  constructor(
    readonly userId: string,
    /** The user's view (replaced when an idle user is loaded again). */
    public entry: UserEntry,
    /** The holder id its requests and calls' events name (Leases.book() says which). */
    readonly holder: string,
    /** The holder is this process's, which books before this one may have held slices under (Leases.adopted()). */
    readonly shared: boolean,
  ) {
    super();
  }

  window(w: WindowNeed): WindowSlice {
    return windowSlice(this.windows, w);
  }

  slice(model: string): Slice {
    let s = this.tokens.get(model);
    if (!s) {
      s = new Slice(model);
      this.tokens.set(model, s);
    }
    return s;
  }
}

export class Leases {
  /** This process as a lease holder: the holder of its team members' books. */
  readonly holder = `h_${randomUUID().replaceAll("-", "")}`;
  /** Books made with a holder id of their own (book()). */
  private made = 0;
  private readonly books = new Map<string, Book>();
  /** This process's slices of teams' spend caps, by teamKey(holder, team id). */
  private readonly teams = new Map<string, TeamBook>();
  /** The keys of `teams` under a book's own holder id (not this process's), by that holder. */
  private readonly teamsOf = new Map<string, Set<string>>();
  /** Lease requests sent (figures for benchmarks). */
  requests = 0;
  /** Calls that waited for a lease request's answer (MeterStats.lease_waits). */
  waits = 0;
  private warned = false;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly transport: Transport,
    private readonly settings: LeaseSettings,
    private readonly warn: (message: string, err?: Error) => void,
  ) {
    this.timer = setInterval(() => void this.releaseIdle(Date.now()), Math.max(50, Math.floor(settings.idleMs / 2)));
    this.timer.unref();
  }

  /** What a call of `model` needs from the lease, or null when nothing it spends is capped (or the user is not loaded). */
  need(e: UserEntry, model: string | null, reserved: ReservationAmount): LeaseNeed | null {
    if (!e.loaded) return null;
    const plan = e.config;
    const capped = plan !== null && model !== null && own(plan.model_limits, model) !== undefined ? model : null;
    const windows = plan === null ? NO_WINDOWS : windowNeeds(e, model, reserved);
    const spend = plan !== null && plan.max_spend_per_period !== null;
    let team = leasedTeam(e);
    const now = Date.now();
    const memberWindows = memberWindowNeeds(e, model, reserved, now);
    if (!spend && capped === null && windows.length === 0 && team === null && memberWindows.length === 0) return null;
    if (team !== null && now < this.teamBook(team, this.books.get(e.userId)?.holder ?? this.holder).unlimitedUntil) team = null;
    const teamSpend = team !== null && team.config!.max_spend_per_period !== null;
    const teamCost = team === null ? 0 : reserved.cost;
    const teamWindows = team === null ? NO_WINDOWS : teamWindowNeeds(team, model, reserved, now);
    const teamModel = team !== null && model !== null && own(team.config!.model_limits, model) !== undefined ? model : null;
    const teamPart = { team, teamSpend, teamCost, teamWindows, memberWindows, teamModel, teamTokens: teamModel === null ? 0 : reserved.tokens };
    if (now < this.book(e).unlimitedUntil) return team === null ? null : { cost: 0, model: null, tokens: 0, whole: reserved.exact, windows: NO_WINDOWS, spend: false, ...teamPart, memberWindows: NO_WINDOWS };
    if (!spend && capped === null && windows.length === 0 && team === null && memberWindows.length === 0) return null;
    return {
      cost: spend ? reserved.cost : 0,
      model: capped,
      tokens: capped === null ? 0 : reserved.tokens,
      whole: reserved.exact,
      windows,
      spend,
      ...teamPart,
    };
  }

  /** True when the lease covers the call now (or the fallback is open while the service is unreachable). */
  covers(e: UserEntry, n: LeaseNeed): boolean {
    const b = this.book(e);
    return b.open || this.short(e, b, n, Date.now()) === null;
  }

  /**
   * Waits until the lease can cover a call it does not cover now: at most for the request in
   * flight, when one was sent before the call came (the rest of its round trip), and then for
   * one request that counts this call (and one more when a plan or subscription change came
   * while that one was on its way). Afterwards the call is taken or hard-gated (take()).
   * `needNow` sizes the call's need at each round: a call counts in the windows of the time it
   * is admitted, and a wait across a window's end would otherwise ask for the window that ended.
   * `admit` takes or hard-gates the call in the same synchronous step as the last check: calls
   * waiting for one answer each find that it covers them, and one admitted later (after an
   * await) could find its slice taken by another.
   */
  async wait<T>(e: UserEntry, needNow: () => LeaseNeed | null, admit: () => T): Promise<T> {
    const b = this.book(e);
    b.waits++;
    let waited = false;
    try {
      return await this.waitFor(b, e, needNow, admit, () => {
        if (!waited) this.waits++;
        waited = true;
      });
    } finally {
      b.waits--;
    }
  }

  /** `onWait` is called before each wait for an answer (the first counts the call in `waits`); `admit` at the end (wait()). */
  private async waitFor<T>(b: Book, e: UserEntry, needNow: () => LeaseNeed | null, admit: () => T, onWait: () => void): Promise<T> {
    // A third round only when a request for another model's tokens was being prepared; a fourth
    // when this book's request went without the team's ask (another member's carried it); a fifth
    // after a change that came while the request was on its way. Waits for other members'
    // requests asking for the team's slice come beside them (TEAM_WAITS): members' first calls
    // that come together each wait for the one ask in flight, then the next, and must still have
    // their own.
    for (let rounds = 5, teamWaits = TEAM_WAITS; rounds > 0; ) {
      const n = needNow();
      if (n === null) return admit();
      this.estimates(b, n);
      const tb = n.team === null ? null : this.teamBook(n.team, b.holder);
      const now = Date.now();
      // In use while a call waits for it: an idle release would give back what the call waits for.
      b.lastUse = now;
      if (tb !== null) tb.lastUse = now;
      if (b.open || this.short(e, b, n, now) === null) return admit();
      // A window or team cap the service has nothing left of (until it ends, or a moment): refused without asking.
      if (this.exhausted(b, n, now)) return admit();
      // The team's slice is on its way with another member's request: that answer may cover this call.
      if (tb !== null && tb.asking !== null && tb.asking !== b.asking && this.teamShort(tb, n, now)) {
        if (teamWaits > 0) teamWaits--;
        else rounds--;
        onWait();
        await tb.asking;
        continue;
      }
      rounds--;
      if (b.leaseId !== null) b.starved = true;
      for (const w of n.windows) b.window(w);
      for (const w of n.memberWindows) windowSlice(b.memberWindows, w);
      if (tb !== null) for (const w of n.teamWindows) tb.window(w);
      if (b.asking === null) this.request(b, n.model, n.teamModel);
      if (!b.sent && (b.model === null || n.model === null || b.model === n.model)) {
        b.model ??= n.model;
        b.waiting++;
        // Only a whole need is the least worth granting: a typical call is covered by any slice,
        // and its first call's estimate may be more than the cap has left.
        if (n.whole) b.needCost = Math.max(b.needCost, n.cost);
        if (n.whole && n.model !== null && n.model === b.model) b.needTokens = Math.max(b.needTokens, n.tokens);
        for (const w of n.windows) b.windowNeeds.set(w.key, Math.max(b.windowNeeds.get(w.key) ?? 0, w.whole ? w.amount : 0));
        for (const w of n.memberWindows) b.memberWindowNeeds.set(w.key, Math.max(b.memberWindowNeeds.get(w.key) ?? 0, w.whole ? w.amount : 0));
        if (n.whole && tb !== null) b.needTeam = Math.max(b.needTeam, n.teamCost);
        if (n.teamModel !== null && (b.teamModel ??= n.teamModel) === n.teamModel && n.whole) b.needTeamTokens = Math.max(b.needTeamTokens, n.teamTokens);
        if (tb !== null) for (const w of n.teamWindows) tb.windowNeeds.set(w.key, Math.max(tb.windowNeeds.get(w.key) ?? 0, w.whole ? w.amount : 0));
        onWait();
        await b.asking!;
        // A plan or subscription change came while it was on its way: what it granted may be
        // under caps no longer in force, which take() would not spend. The call waits for the
        // request asked under the caps in force instead of being refused.
        if (b.askedEpoch !== b.epoch || (tb !== null && tb.askedEpoch !== tb.epoch)) continue;
        // Another member's request, sent before this one, carried the team's ask: its answer (or,
        // once it came and did not cover the call, a request of this book's own) may cover the call.
        if (tb !== null && !b.askedTeam && this.teamShort(tb, n, Date.now())) continue;
        return admit();
      }
      onWait();
      await b.asking;
    }
    return admit();
  }

  /**
   * Prepares the next request (one per user at a time). It is sent on the next turn of the
   * event loop, so that the calls that come in the same turn (a burst of first calls) are
   * counted in what it asks for.
   */
  private request(b: Book, model: string | null, teamModel: string | null = null): Promise<void> {
    if (b.asking !== null) return b.asking;
    b.sent = false;
    b.model = model;
    b.teamModel = teamModel;
    b.asking = new Promise<void>((resolve) => setTimeout(resolve, 0))
      .then(() => this.send(b))
      .finally(() => {
        b.asking = null;
        if (b.teamAsked !== null) b.teamAsked.asking = null;
        b.teamAsked = null;
      });
    return b.asking;
  }

  private async send(b: Book): Promise<void> {
    const sentAt = Date.now();
    b.sent = true;
    b.askedAt = sentAt;
    const { model, waiting, needCost, needTokens, needTeam, windowNeeds, memberWindowNeeds, teamModel, needTeamTokens } = b;
    const epoch = (b.askedEpoch = b.epoch);
    const spendCap = capOf(b.entry, null);
    const tokenCap = model === null ? null : capOf(b.entry, model);
    b.waiting = b.needCost = b.needTokens = b.needTeam = b.needTeamTokens = 0;
    b.windowNeeds = new Map();
    b.memberWindowNeeds = new Map();
    // Failing open, a request is the way to learn that the service answers again.
    const renew = sentAt >= this.renewAt(b) || b.open || this.renewing(b);
    const spend = spendCap === null ? { need: 0, want: 0 } : this.asked(b, b.spend, needCost, waiting, renew, sentAt, spendCapWithCredits(b.entry));
    const body: Record<string, unknown> = { holder: b.holder, need: spend.need, want: spend.want, ttl_ms: this.settings.ttlMs };
    let wanted = spend.want > 0;
    // What the spend slice holds beyond a round trip's needs is offered back, and not spent until the answer comes.
    const spare = spendCap !== null && spend.need === 0 ? this.spare(b, b.spend, sentAt) : 0;
    if (spare > 0) {
      body.spare = spare;
      b.spend.granted = addDollars(b.spend.granted, -spare);
      wanted = true;
    }
    // Every window of the user's calls that runs low, is needed by a waiting call, or nears its lifetime's end.
    const { windows, asks } = this.windowAsks(b, b.windows, windowNeeds, waiting, renew, sentAt, (d) => windowCapOf(b.entry, d.dimension));
    if (asks.length > 0) {
      body.windows = asks;
      wanted = true;
    }
    // The same for the member-scope windows of the user's team plan.
    const members = this.windowAsks(b, b.memberWindows, memberWindowNeeds, waiting, renew, sentAt, (s) => memberWindowCapOf(b.entry, s.dimension));
    if (members.asks.length > 0) {
      body.member_windows = members.asks;
      wanted = true;
    }
    let wantTokens = 0;
    let spareTokens = 0;
    if (model !== null) {
      const ts = b.slice(model);
      const t = this.asked(b, ts, needTokens, waiting, renew, sentAt, tokenCap);
      wantTokens = Math.ceil(t.want);
      Object.assign(body, { model, need_tokens: Math.ceil(t.need), want_tokens: wantTokens });
      wanted ||= t.want > 0;
      spareTokens = tokenCap !== null && t.need === 0 ? this.spare(b, ts, sentAt) : 0;
      if (spareTokens > 0) {
        body.spare_tokens = spareTokens;
        ts.granted -= spareTokens;
        wanted = true;
      }
    }
    // The team's slice, unless another member's request is asking for it.
    const team = leasedTeam(b.entry);
    const tb = team === null ? null : this.teamBook(team, b.holder);
    let teamWant = 0;
    let teamTokensWant = 0;
    let teamWindows: AskedWindow[] = [];
    let teamSpare = 0;
    let teamSpareTokens = 0;
    let teamCap: number | null = null;
    let teamTokenCap: number | null = null;
    const teamEpoch = tb?.epoch ?? 0;
    // Held back after a refusal, unless calls run on the slice and it nears its end: renewed, the
    // service keeps their estimates from lapsing under them.
    const renewingHeld = tb !== null && tb.holds > 0 && sentAt < tb.deadline && sentAt >= tb.deadline - this.renewMargin(tb);
    if (tb !== null && tb.asking === null && (sentAt >= tb.retryAt || renewingHeld) && sentAt >= tb.unlimitedUntil) {
      teamCap = teamCapOf(team!);
      // After a change of the team plan, every slice is asked for again under its caps.
      const renewTeam = b.open || this.renewing(tb);
      const t = teamCap === null ? { need: 0, want: 0 } : this.asked(tb, tb.spend, needTeam, waiting, renewTeam || sentAt >= tb.deadline - this.renewMargin(tb), sentAt, teamCap);
      const tw = this.windowAsks(tb, tb.windows, tb.windowNeeds, waiting, renewTeam, sentAt, (d) => teamWindowCapOf(team!, d.dimension));
      tb.windowNeeds = new Map();
      const tokenCap = (teamTokenCap = teamModel === null ? null : teamTokenCapOf(team!, teamModel));
      const tt = tokenCap === null ? { need: 0, want: 0 } : this.asked(tb, tb.slice(teamModel!), needTeamTokens, waiting, renewTeam || sentAt >= tb.deadline - this.renewMargin(tb), sentAt, tokenCap);
      // What the team's spend slice holds beyond two round trips' needs is offered back too, and not spent until the answer comes.
      teamSpare = teamCap !== null && t.need === 0 && !b.open && b.lostAt === 0 ? this.teamSpare(tb, sentAt) : 0;
      // And what its slice of the model's team token cap holds beyond that.
      teamSpareTokens = tokenCap !== null && tt.need === 0 && !b.open && b.lostAt === 0 ? this.teamSpareTokens(tb, tb.slice(teamModel!), sentAt) : 0;
      if (t.want > 0 || tw.asks.length > 0 || tt.want > 0 || teamSpare > 0 || teamSpareTokens > 0) {
        teamWant = t.want;
        teamWindows = tw.windows;
        teamTokensWant = tt.want > 0 ? Math.ceil(tt.want) : 0;
        const ask: Record<string, unknown> = { need: t.need, want: t.want };
        if (teamSpare > 0) {
          ask.spare = teamSpare;
          tb.spend.granted = addDollars(tb.spend.granted, -teamSpare);
        }
        if (tw.asks.length > 0) ask.windows = tw.asks;
        if (tt.want > 0) Object.assign(ask, { model: teamModel, need_tokens: Math.ceil(tt.need), want_tokens: teamTokensWant });
        if (teamSpareTokens > 0) {
          Object.assign(ask, { model: teamModel, spare_tokens: teamSpareTokens });
          tb.slice(teamModel!).granted -= teamSpareTokens;
        }
        body.team = ask;
        tb.askedEpoch = teamEpoch;
        tb.asking = b.asking;
        b.teamAsked = tb;
        wanted = true;
      }
    }
    b.askedTeam = b.teamAsked !== null;
    // Calls given back since it was prepared (or a slower rate) left nothing to ask for.
    if (!wanted) return;
    // The service renews a live lease that grants nothing only when its request asked no need (a
    // call's refused need renews nothing: leases/store.ts, windows/slices.ts). Kept here for
    // another lifetime otherwise, a slice would be spent past the service's end while other
    // replicas are granted the same money.
    const renewed = !asksNeed(body);
    this.requests++;
    let res: { limited: boolean; lease: LeaseWire | null };
    try {
      res = await this.transport.request("POST", `/users/${encodeURIComponent(b.userId)}/leases`, body);
    } catch (err) {
      if (err instanceof MeterApiError && !err.retryable) {
        // An older service refuses a field it does not know by name (422).
        const offerRefused = err.status === 422 && /\bspare/.test(err.detail);
        if (spare > 0 || spareTokens > 0) {
          // Refused whole: nothing offered was taken back. A service that takes nothing back: nothing is offered for a minute.
          this.spared(b, model, spare, spareTokens, null);
          if (offerRefused) b.spareAt = Date.now() + 60_000;
        }
        if (teamSpare > 0 || teamSpareTokens > 0) {
          this.spared(tb!, teamModel, teamSpare, teamSpareTokens, null);
          if (offerRefused) tb!.spareAt = Date.now() + 60_000;
        }
        // A service that does not lease windows yet refuses the field: windows are then kept
        // per process, as without leases, and asked for again in a minute.
        if (err.status === 422 && !offerRefused) for (const { s } of [...windows, ...members.windows]) s.unlimitedUntil = Date.now() + 60_000;
        this.warn(`lease request for ${b.userId} refused`, err);
        return;
      }
      // Whether the service granted something is unknown: a later answer tells (adopted below).
      if (b.lostAt === 0) b.lostAt = sentAt;
      b.open = this.settings.fallback === "open";
      if (!this.warned) this.warn(`lease request failed; ${b.open ? "calls fail open" : "calls spend only what the lease holds"} until the service answers`, err as Error);
      this.warned = true;
      return;
    }
    this.roundTrip(b, Date.now() - sentAt);
    b.open = false;
    if (spare > 0 || spareTokens > 0) this.spared(b, model, spare, spareTokens, res.limited ? res.lease : null);
    // Before the grant is recorded: a grant sets the slice to what the service holds for it.
    if (teamSpare > 0 || teamSpareTokens > 0) this.spared(tb!, teamModel, teamSpare, teamSpareTokens, res.limited ? (res.lease?.team ?? null) : null);
    if (b.teamAsked !== null) {
      // Given back through this member's lease from now on: its answer told what its holder holds of the user's own.
      b.teamAsked.via = b.userId;
      const asked = { want: teamWant, tokensWant: teamTokensWant, windows: teamWindows, epoch: teamEpoch, spendCap: teamCap, tokenCap: teamTokenCap };
      this.teamGranted(b.teamAsked, team!, res.limited ? (res.lease?.team ?? null) : null, asked, sentAt, res.lease?.ttl_ms ?? this.settings.ttlMs, Date.now() - sentAt, renewed);
    }
    if (!res.limited || !res.lease) {
      b.unlimitedUntil = Date.now() + 60_000;
      return;
    }
    const l = res.lease;
    if (b.leaseId === null || Date.parse(l.period_end) !== b.periodEndMs) {
      // A new period: the lease starts from what the service holds for it.
      b.spend.granted = b.spend.used = 0;
      b.spend.answered = false;
      b.tokens.clear();
    }
    adopted(b, b.spend, l.granted, l.added);
    if (model !== null && l.tokens !== null) adopted(b, b.slice(model), l.tokens.granted, l.tokens.added);
    b.leaseId = l.lease_id;
    b.periodEndMs = Date.parse(l.period_end);
    const windowsFull =
      this.windowsGranted(b, windows, l.windows ?? [], sentAt, l.ttl_ms, epoch === b.epoch, renewed) &&
      this.windowsGranted(b, members.windows, l.member_windows ?? [], sentAt, l.ttl_ms, epoch === b.epoch, renewed);
    b.full = l.added >= spend.want - 1e-9 && (model === null || l.tokens === null || l.tokens.added >= wantTokens) && windowsFull;
    b.boost = !b.full ? 1 : b.starved ? Math.min(MAX_BOOST, 2 * b.boost) : b.boost;
    b.starved = false;
    if (l.added > 0 || (l.tokens?.added ?? 0) > 0) {
      // The lease as written: a lapsed one restarted in every budget, so the token budgets
      // of other models hold nothing here until asked for again.
      if (sentAt >= b.deadline) for (const t of b.tokens.values()) t.granted = Math.min(t.granted, t.used);
      b.spend.granted = l.granted;
      if (model !== null && l.tokens !== null) b.slice(model).granted = l.tokens.granted;
      this.granted(b, epoch, spendCap, model, tokenCap);
      b.deadline = sentAt + l.ttl_ms;
      b.lostAt = 0;
    } else if (sentAt < b.deadline && b.lostAt === 0) {
      // Nothing more, but the service keeps a live lease for another lifetime when asked again for no need.
      if (renewed) b.deadline = sentAt + l.ttl_ms;
      // Asked under the caps in force after a change that came while the last grant was on its way:
      // with something left under them, the service counted what this holder holds within them, so
      // the slice is valid under them, as a grant would have proved it. Else a call whose need was
      // refused only because the slice already holds it would be refused.
      if (epoch === b.epoch && this.renewing(b) && roomLeft(l, model)) this.granted(b, epoch, spendCap, model, tokenCap);
    } else if (b.lostAt > 0 && Date.now() < b.lostAt + l.ttl_ms && (l.granted > b.spend.granted || (model !== null && l.tokens !== null && l.tokens.granted > b.slice(model).granted))) {
      // Nothing added, but the lease holds more than this process knew: a request whose answer
      // was lost was granted. The service keeps it until at least that request's time plus the
      // lifetime; left unused, it would be lost to every replica until it lapsed.
      if (b.lostAt >= b.deadline) for (const t of b.tokens.values()) t.granted = Math.min(t.granted, t.used);
      b.spend.granted = Math.max(b.spend.granted, l.granted);
      if (model !== null && l.tokens !== null) b.slice(model).granted = Math.max(b.slice(model).granted, l.tokens.granted);
      this.granted(b, epoch, spendCap, model, tokenCap);
      b.deadline = Math.max(b.deadline, b.lostAt + l.ttl_ms);
      b.lostAt = 0;
    }
  }

  /**
   * Takes a call's estimate from the lease (synchronously, after covers()): the lease id its
   * usage event carries, or the hard gate of the budget the lease cannot cover. Asks for the
   * next slice in the background once what is left runs low, or the lease nears its end.
   */
  take(e: UserEntry, n: LeaseNeed): { leaseId: string | null; periods?: LeasePeriods } | { refused: GuardResult } {
    const b = this.book(e);
    const now = Date.now();
    b.lastUse = now;
    this.estimates(b, n);
    if (b.open) {
      // Failing open until the service answers again: ask now and then whether it does.
      if (b.asking === null && now - b.askedAt >= OPEN_RETRY_MS) void this.request(b, n.model);
      return { leaseId: null };
    }
    const short = this.short(e, b, n, now);
    if (short !== null) return { refused: short };
    b.spend.used = addDollars(b.spend.used, n.cost);
    b.spend.took(n.cost, now);
    let lowTeam = false;
    const periods = { user: b.periodEndMs, team: 0 };
    // The team book whose slices may be offered back, should nothing else ask this turn (what they spare is worked out only then).
    let offerFrom: TeamBook | null = null;
    if (n.team !== null) {
      const tb = this.teamBook(n.team, b.holder);
      periods.team = tb.periodEndMs;
      tb.spend.used = addDollars(tb.spend.used, n.teamCost);
      tb.spend.took(n.teamCost, now);
      tb.holds++;
      tb.lastUse = now;
      let lowWindow = false;
      for (const w of n.teamWindows) {
        const s = tb.window(w);
        s.used += w.amount;
        s.took(w.amount, now);
        lowWindow ||= now >= s.retryAt && (this.balance(tb, s, now) < this.lowWater(tb, s, now) || now >= s.deadline - this.renewMargin(tb));
      }
      if (n.teamModel !== null) {
        const ts = tb.slice(n.teamModel);
        ts.used += n.teamTokens;
        ts.took(n.teamTokens, now);
        lowWindow ||= this.balance(tb, ts, now) < this.lowWater(tb, ts, now) || now >= tb.deadline - this.renewMargin(tb);
      }
      const lowSpend = n.teamSpend && (this.balance(tb, tb.spend, now) < this.lowWater(tb, tb.spend, now) || now >= tb.deadline - this.renewMargin(tb));
      // After a change of the team plan the team's slices are asked for again once, in the background.
      lowTeam = tb.asking === null && now >= tb.retryAt && (lowSpend || lowWindow || (this.renewing(tb) && tb.askedEpoch !== tb.epoch));
      if (!lowTeam && (n.teamSpend || n.teamModel !== null) && tb.asking === null && b.lostAt === 0) offerFrom = tb;
      // The lease id is the holder's: the event settles the team's slice with it (and the user's, when held).
      b.leaseId ??= b.holder;
    }
    const t = n.model === null ? null : b.slice(n.model);
    if (t) {
      t.used += n.tokens;
      t.took(n.tokens, now);
    }
    let lowWindow = false;
    for (const w of n.windows) {
      const s = b.window(w);
      s.used += w.amount;
      s.took(w.amount, now);
      lowWindow ||= now >= s.retryAt && (this.balance(b, s, now) < this.lowWater(b, s, now) || now >= s.deadline - this.renewMargin(b));
    }
    for (const w of n.memberWindows) {
      const s = windowSlice(b.memberWindows, w);
      s.used += w.amount;
      s.took(w.amount, now);
      lowWindow ||= now >= s.retryAt && (this.balance(b, s, now) < this.lowWater(b, s, now) || now >= s.deadline - this.renewMargin(b));
    }
    // A call that spends from no lease (every budget it touches unlimited for now) holds nothing:
    // unhold() gives back only what names the lease, so such a hold would never be let go.
    if (b.leaseId !== null) b.holds++;
    if (b.asking === null) {
      const period = n.spend || t !== null;
      const low =
        lowWindow ||
        lowTeam ||
        (n.spend && this.balance(b, b.spend, now) < this.lowWater(b, b.spend, now)) ||
        (t !== null && this.balance(b, t, now) < this.lowWater(b, t, now));
      // After a plan change the lease is renewed under the new caps once, in the background.
      if (low || (period && now >= this.renewAt(b)) || (this.renewing(b) && b.askedEpoch !== b.epoch)) void this.request(b, n.model, n.teamModel);
      else if (
        (offerFrom !== null && (this.teamSpare(offerFrom, now) > 0 || (n.teamModel !== null && this.teamSpareTokens(offerFrom, offerFrom.slice(n.teamModel), now) > 0))) ||
        (now >= b.spareAt && ((n.spend && this.spare(b, b.spend, now) > 0) || (t !== null && this.spare(b, t, now) > 0)))
      )
        void this.request(b, n.model, n.teamModel);
    }
    return { leaseId: b.leaseId, periods };
  }

  /** Gives a hold back (what take() took); the call's real usage, if it ran, comes through spend(). */
  unhold(h: Hold): void {
    const leaseId = h.lease ?? null;
    const team = h.leaseTeam ?? null;
    // The lease id is the holder id of the book that took the hold.
    const tb = team === null || leaseId === null ? undefined : this.teams.get(teamKey(leaseId, team.teamId));
    if (tb !== undefined) {
      // Taken in a period that has ended: the new period's slices never held it.
      if (h.leasePeriods === undefined || h.leasePeriods.team === tb.periodEndMs) {
        tb.spend.used = Math.max(0, addDollars(tb.spend.used, -h.cost));
        const ts = h.model === null ? undefined : tb.tokens.get(h.model);
        if (ts) ts.used = Math.max(0, ts.used - h.tokens);
      }
      giveBack(tb.windows, h.leaseTeamWindows ?? NO_WINDOWS);
      tb.holds = Math.max(0, tb.holds - 1);
    }
    const b = this.books.get(h.entry.userId);
    if (!b || leaseId === null || b.leaseId !== leaseId) return;
    if (h.leasePeriods === undefined || h.leasePeriods.user === b.periodEndMs) {
      b.spend.used = Math.max(0, addDollars(b.spend.used, -h.cost));
      const t = h.model === null ? undefined : b.tokens.get(h.model);
      if (t) t.used = Math.max(0, t.used - h.tokens);
    }
    giveBack(b.windows, h.leaseWindows ?? NO_WINDOWS);
    giveBack(b.memberWindows, h.leaseMemberWindows ?? NO_WINDOWS);
    b.holds = Math.max(0, b.holds - 1);
  }

  /**
   * The usage of a metered call (reserved or recorded after the fact) is spent from the
   * user's lease; returns the lease id its usage event carries, or null.
   */
  spend(e: UserEntry, cost: number, model: string | null, tokens: number, at: number): string | null {
    const b = this.books.get(e.userId);
    const team = leasedTeam(e);
    const holder = b?.holder ?? this.holder;
    const tb = team === null ? undefined : this.teams.get(teamKey(holder, team.teamId));
    // Spent from the team's slices once one was granted (its event names the holder, which settles them).
    const teamLease = tb !== undefined && tb.leased ? holder : null;
    if (teamLease !== null) {
      spentFrom(tb!, cost, model, tokens);
      // The team's windows at the event's time, as the user's below.
      if (tb!.windows.size > 0) {
        for (const w of teamWindowNeeds(team!, model, { cost, tokens, exact: true }, at)) finished(tb!.window(w), w.amount);
      }
    }
    if (!b || b.leaseId === null) return teamLease;
    spentFrom(b, cost, model, tokens);
    // The windows its event counts in (its time's): a call held on one window and recorded in
    // the next is taken from the next one's slice, so what the service counts there stays
    // within what this holder was granted of it.
    if (b.windows.size > 0) {
      for (const w of windowNeeds(e, model, { cost, tokens, exact: true }, at)) finished(b.window(w), w.amount);
    }
    if (b.memberWindows.size > 0) {
      for (const w of memberWindowNeeds(e, model, { cost, tokens, exact: true }, at)) finished(windowSlice(b.memberWindows, w), w.amount);
    }
    return b.leaseId;
  }

  /**
   * The user's plan or subscription changed: the lease is asked for again, under the new caps,
   * in the background by the next call. Meanwhile calls keep spending from the slice held while
   * it is still valid under the caps in force (the user's view, reloaded after the change): in
   * the same period, and no budget's cap lower than when the slice was asked for. Otherwise
   * they wait for the new grant, as a first call does.
   */
  renew(userId: string, teamId: string | null = null): void {
    const b = this.books.get(userId);
    // The team's slices too (the member's team plan, or the team's subscription, may be what
    // changed): held under this process's holder id unless the member's book has one of its own.
    const tb = teamId === null ? undefined : this.teams.get(teamKey(b?.holder ?? this.holder, teamId));
    if (tb !== undefined) {
      tb.epoch++;
      tb.unlimitedUntil = tb.retryAt = 0;
      for (const s of tb.windows.values()) s.retryAt = 0;
    }
    if (!b) return;
    b.epoch++;
    b.unlimitedUntil = 0;
    // A window refused under the old limits may have room under the new ones.
    for (const s of [...b.windows.values(), ...b.memberWindows.values()]) s.retryAt = 0;
  }

  /** Gives every lease back (shutdown), each request bounded by what is left of `deadline` (performance.now()). */
  async releaseAll(deadline = Infinity): Promise<void> {
    clearInterval(this.timer);
    const left = () => Math.max(1, Math.min(this.transport.timeoutMs, deadline - performance.now()));
    // Requests asked ahead and not answered yet first: what they are granted goes back with the rest.
    await Promise.all([...this.books.values()].map((b) => b.asking));
    await Promise.all([...this.books.values()].map((b) => this.release(b, left())));
    // Team slices no member's release took back (their member's team changed meanwhile).
    for (const tb of this.teams.values()) {
      const via = tb.via === null ? undefined : this.books.get(tb.via);
      if (via !== undefined && this.teamIdle(tb) && performance.now() < deadline) await this.release(via, left());
    }
  }

  /**
   * The hard gate of the budgets the lease cannot cover, or null when it covers the call: of
   * several, the one that allows a call again last (BUDGETS.md §1), as the local check names it.
   */
  private short(e: UserEntry, b: Book, n: LeaseNeed, now: number): GuardResult | null {
    const refused: GuardResult[] = [];
    if (n.team !== null) {
      const tb = this.teams.get(teamKey(b.holder, n.team.teamId));
      if (n.teamSpend && (tb === undefined || this.teamSpendShort(tb, n, now))) refused.push(teamRefusal(n.team, n.teamCost));
      if (n.teamModel !== null && (tb === undefined || this.teamTokensShort(tb, n, now))) refused.push(teamTokenRefusal(n.team, n.teamModel, n.teamTokens));
      for (const w of n.teamWindows) {
        const s = tb?.windows.get(w.key);
        if (s !== undefined && now < s.unlimitedUntil) continue;
        const left = s === undefined ? 0 : this.balance(tb!, s, now);
        if (left <= 0 || (w.whole && left < w.amount)) refused.push(windowRefusal(n.team.config!, n.team.counters, w, teamLimitReason));
      }
    }
    const plan = e.config!;
    if (n.spend) {
      const left = this.balance(b, b.spend, now);
      if (left <= 0 || (n.whole && left < n.cost)) {
        const cap = toDollars(Math.round(toNano(plan.max_spend_per_period!) * plan.hard_gate_at));
        refused.push(refusal(e, "total_spend", addDollars(e.periodCost, e.reservedCost), cap, `period spend cap of $${cap.toFixed(2)} reached: no budget lease covers this call (estimate $${n.cost.toFixed(4)}) across replicas`));
      }
    }
    if (n.model !== null) {
      const t = b.tokens.get(n.model);
      const left = t ? this.balance(b, t, now) : 0;
      if (left <= 0 || (n.whole && left < n.tokens)) {
        const cap = own(plan.model_limits, n.model)!.max_tokens_per_period * plan.hard_gate_at;
        const current = (own(e.tokensByModel, n.model) ?? 0) + (own(e.reservedTokens, n.model) ?? 0);
        refused.push(refusal(e, `model_limit:${n.model}`, current, cap, `token cap of ${cap} for ${n.model} reached: no budget lease covers this call (${n.tokens} tokens) across replicas`));
      }
    }
    for (const w of n.windows) {
      const s = b.windows.get(w.key);
      if (s !== undefined && now < s.unlimitedUntil) continue;
      const left = s === undefined ? 0 : this.balance(b, s, now);
      if (left <= 0 || (w.whole && left < w.amount)) refused.push(windowRefusal(plan, e.counters, w, limitReason));
    }
    for (const w of n.memberWindows) {
      const s = b.memberWindows.get(w.key);
      if (s !== undefined && now < s.unlimitedUntil) continue;
      const left = s === undefined ? 0 : this.balance(b, s, now);
      if (left <= 0 || (w.whole && left < w.amount)) refused.push(windowRefusal(e.team!.config!, e.memberCounters, w, teamLimitReason));
    }
    return liftsLast(refused);
  }

  /** A window the call needs is short and the service had nothing left of it when last asked. */
  private exhausted(b: Book, n: LeaseNeed, now: number): boolean {
    if (n.team !== null) {
      const tb = this.teams.get(teamKey(b.holder, n.team.teamId));
      if (tb !== undefined && now < tb.retryAt && n.teamSpend && this.teamSpendShort(tb, n, now)) return true;
      if (tb !== undefined && windowsExhausted(tb.windows, n.teamWindows, now, (s) => this.balance(tb, s, now))) return true;
    }
    return windowsExhausted(b.windows, n.windows, now, (s) => this.balance(b, s, now)) || windowsExhausted(b.memberWindows, n.memberWindows, now, (s) => this.balance(b, s, now));
  }

  /**
   * Records the service's answer for each window asked: a grant extends the slice's lifetime; a
   * refusal holds further requests for that window back until it ends when no other holder holds
   * any of it (nothing can come back before), else for a moment. True when every one was granted
   * what was asked.
   */
  private windowsGranted(b: Book | TeamBook, asked: readonly AskedWindow[], answers: readonly WindowLeaseWire[], sentAt: number, ttlMs: number, capsCurrent: boolean, renewed: boolean): boolean {
    let full = true;
    const now = Date.now();
    asked.forEach(({ s, want, cap }, k) => {
      const a = answers[k];
      if (a === undefined || a.dimension !== s.dimension) return;
      if (!a.limited) {
        s.unlimitedUntil = now + 60_000;
        return;
      }
      if (s.start !== null && (a.window_start === null || Date.parse(a.window_start) !== s.start)) return;
      const unit = (x: number) => (s.dimension.startsWith("spend:") ? toNano(x) : x);
      adopted(b, s, unit(a.granted), unit(a.added));
      if (a.added > 0) {
        s.granted = unit(a.granted);
        s.deadline = sentAt + ttlMs;
        s.retryAt = 0;
        if (capsCurrent) s.cap = cap ?? Infinity;
      } else {
        // A live slice asked again for no need is kept for another lifetime.
        if (renewed && sentAt < s.deadline) s.deadline = sentAt + ttlMs;
        // Until the window ends only when nothing is left of it and nobody holds any (nothing can
        // come back before); a call that needed more than is left leaves room for smaller ones.
        if (unit(a.remaining) <= 0 || this.balance(b, s, now) <= 0) s.retryAt = unit(a.remaining) <= 0 && a.holders === 0 && s.end !== Infinity ? s.end : now + OPEN_RETRY_MS;
        s.leftAtService = unit(a.remaining);
      }
      if (unit(a.added) < want) full = false;
    });
    return full;
  }

  private async releaseIdle(now: number): Promise<void> {
    for (const b of this.books.values()) {
      // Calls still running on a lease that nears its end (a call longer than its lifetime):
      // asked again, the service keeps it (and their estimates) for another lifetime, even
      // with nothing more to grant; else it lapsed under them and another replica was granted it.
      if (b.holds > 0 && b.asking === null && b.leaseId !== null && !b.open && this.nearsEnd(b, now)) {
        void this.request(b, b.model, b.teamModel);
        continue;
      }
      const held = (b.leaseId !== null && (now < b.deadline || this.holdsUnused(b, now))) || b.lostAt > 0;
      if (held && b.holds === 0 && b.asking === null && now - b.lastUse >= this.settings.idleMs) {
        await this.release(b, undefined, true);
      }
    }
    for (const tb of this.teams.values()) {
      const via = tb.via === null ? undefined : this.books.get(tb.via);
      if (via !== undefined && this.teamIdle(tb) && now - tb.lastUse >= this.settings.idleMs) await this.release(via, undefined, true);
    }
    const later = Date.now();
    for (const b of this.books.values()) if (this.forgettable(b, later)) this.forget(b);
    for (const [key, tb] of this.teams) if (tb.shared && this.teamForgettable(tb, later)) this.teams.delete(key);
  }

  /**
   * The book (a user's or a team's) holds something granted and not used that the service may
   * still count for its holder: its spend or token slices before the lease's end, its window
   * slices before theirs. A shared holder's past the lease's end too: the service keeps a lapsed
   * lease for a grace period, and the next book under that holder would find it there (adopted()).
   */
  private holdsUnused(b: Book | TeamBook, now: number): boolean {
    if (b instanceof Book && b.leaseId === null) return false;
    const unused = (s: Slice) => s.granted > s.used;
    const window = (s: WindowSlice) => (b.shared ? now < s.end : now < s.deadline) && unused(s);
    const windows = b instanceof Book ? [...b.windows.values(), ...b.memberWindows.values()] : [...b.windows.values()];
    return ((b.shared || now < b.deadline) && [b.spend, ...b.tokens.values()].some(unused)) || windows.some(window);
  }

  /**
   * The lease, or a slice the next request would ask for (a window still running, not held back,
   * still limited), is within its renewal margin of its end. Only before the end: an answer moves
   * it on, and once past it nothing asks again each tick (the service keeps a lease for a grace
   * period, and a lapsed one is asked anew by the next call).
   */
  private nearsEnd(b: Book, now: number): boolean {
    const margin = this.renewMargin(b);
    const near = (deadline: number, m = margin) => deadline > 0 && now < deadline && now >= deadline - m;
    const asked = (s: WindowSlice, cap: number | null) => s.granted > 0 && now < s.end && now >= s.retryAt && now >= s.unlimitedUntil && cap !== null && near(s.deadline);
    // The team's slice too: a member whose own plan caps nothing holds no lease of its own to renew,
    // and the team's would lapse under its running call (its request carries the team's ask).
    const team = leasedTeam(b.entry);
    const tb = team === null ? undefined : this.teams.get(teamKey(b.holder, team.teamId));
    return (
      near(b.deadline) ||
      (tb !== undefined && tb.holds > 0 && tb.asking === null && near(tb.deadline, this.renewMargin(tb))) ||
      [...b.windows.values()].some((s) => asked(s, windowCapOf(b.entry, s.dimension))) ||
      [...b.memberWindows.values()].some((s) => asked(s, memberWindowCapOf(b.entry, s.dimension)))
    );
  }

  /** No call holds on the team's slices, none asks for them, and one holds something unused. */
  private teamIdle(tb: TeamBook, now = Date.now()): boolean {
    if (tb.holds !== 0 || tb.asking !== null) return false;
    return tb.spend.granted > tb.spend.used || [...tb.tokens.values()].some((s) => s.granted > s.used) || liveWindows(tb.windows, now).some((s) => s.granted > s.used);
  }

  /**
   * The lease keeps what was used; the rest goes back to the user's pool, including what a
   * request whose answer was lost may have been granted (the lease id is the holder id).
   */
  private async release(b: Book, timeoutMs?: number, idle = false): Promise<void> {
    // One request per book at a time, a release included: a grant the service wrote while the
    // release was on its way would be overwritten by it (it sets the lease to what was used),
    // and spent here while another replica is granted the same money.
    while (b.asking !== null) await b.asking;
    const now = Date.now();
    // Given back for idleness, decided before that request's answer: not if a call took from the
    // book or waited for it since (the answer may be what that call is about to take).
    if (idle && (b.holds > 0 || b.waits > 0 || now - b.lastUse < this.settings.idleMs)) return;
    const windows = liveWindows(b.windows, now);
    const memberWindows = liveWindows(b.memberWindows, now);
    const slices = [b.spend, ...b.tokens.values(), ...windows, ...memberWindows];
    // The team's slice goes back with a member's lease once no call of any member holds on it.
    const team = leasedTeam(b.entry);
    const tb = team === null ? undefined : this.teams.get(teamKey(b.holder, team.teamId));
    const teamBack = tb !== undefined && this.teamIdle(tb, now) && !(idle && now - tb.lastUse < this.settings.idleMs);
    if (!teamBack && b.lostAt === 0 && !unusedIn(b, slices)) return;
    b.lostAt = 0;
    // A shared holder's slice no answer told of: what this book used of it is not what the holder holds (adopted()).
    if (!told(b, b.spend)) return;
    const named = <S extends Slice>(book: Book | TeamBook, list: Iterable<S>) => [...list].filter((s) => told(book, s));
    for (const s of slices) s.granted = s.used;
    const body: Record<string, unknown> = { used: b.spend.used };
    if (teamBack) {
      if (team!.config!.max_spend_per_period !== null && told(tb!, tb!.spend)) body.team_used = tb!.spend.used;
      tb!.spend.granted = tb!.spend.used;
      const teamTokens = named(tb!, tb!.tokens.values());
      if (teamTokens.length > 0) body.team_used_tokens = Object.fromEntries(teamTokens.map((s) => [s.model!, Math.ceil(s.used)]));
      for (const s of tb!.tokens.values()) s.granted = s.used;
      const teamWindows = liveWindows(tb!.windows, now);
      for (const s of teamWindows) s.granted = s.used;
      const toldWindows = named(tb!, teamWindows);
      if (toldWindows.length > 0) body.team_used_windows = toldWindows.map(windowUse);
    }
    const tokens = named(b, b.tokens.values());
    if (tokens.length > 0) body.used_tokens = Object.fromEntries(tokens.map((s) => [s.model!, Math.ceil(s.used)]));
    const toldWindows = named(b, windows);
    if (toldWindows.length > 0) body.used_windows = toldWindows.map(windowUse);
    const toldMembers = named(b, memberWindows);
    if (toldMembers.length > 0) body.used_member_windows = toldMembers.map(windowUse);
    const releasing = this.transport
      .request("POST", `/users/${encodeURIComponent(b.userId)}/leases/${b.leaseId ?? b.holder}/release`, body, timeoutMs)
      .then(
        () => undefined,
        (err: unknown) => {
          // Not given back: it returns to the pool when it expires.
          if (!(err instanceof MeterApiError && err.status === 404)) this.warn(`giving back the lease of ${b.userId} failed`, err as Error);
        },
      );
    // Meanwhile the book's next request, and the team's next ask by any member, wait for it (request(), send()).
    b.asking = releasing;
    if (teamBack) tb!.asking = releasing;
    await releasing;
    if (b.asking === releasing) b.asking = null;
    if (teamBack && tb!.asking === releasing) tb!.asking = null;
  }

  /**
   * What a request asks of one budget: nothing while it holds something and its low-water mark
   * and covers the waiting calls (unless the lease is renewed); else the low-water mark plus
   * callsPerLease calls and one per waiting call, plus what finished calls took beyond the slice
   * (their real cost was known only after they ran), with what the most a waiting call needs
   * lacks beyond what the slice holds as the least worth granting when the budget cannot cover
   * it (the service grants nothing below that least: asking the whole call near the cap refused
   * calls that what is held plus what is left would cover). While no unit is known (calls
   * estimated at 0 and none finished yet), `cap` / callsPerLease (`cap`: the budget's cap in its
   * unit, null when unknown).
   */
  private asked(b: Book | TeamBook, s: Slice, need: number, waiting: number, renew: boolean, now: number, cap: number | null): { need: number; want: number } {
    const left = this.balance(b, s, now);
    const short = need > 0 && left < need;
    const low = this.lowWater(b, s, now, waiting);
    if (!short && left > 0 && left >= low && !renew) return { need: 0, want: 0 };
    const over = Math.max(0, -left);
    const lacking = !short ? 0 : s === b.spend ? addDollars(need, -left) : need - left;
    if (s.unit === 0) return { need: lacking, want: Math.max(need, lacking, firstSlice(cap, this.settings.callsPerLease) + over) };
    const floor = b.full && s.age(now) < RATE_TAU_MS ? (s.unit * (b.holds + waiting) * this.horizon(b)) / MIN_CALL_MS : 0;
    const boost = b.full ? b.boost : 1;
    return { need: lacking, want: Math.max(need, lacking, boost * (low + s.unit * (this.settings.callsPerLease + waiting)) + over, floor) };
  }

  /**
   * Below this much left, the next slice is asked for: LOOKAHEAD round trips' worth of the
   * spend rate, and never less than one call per call in flight (a replica's concurrency).
   */
  private lowWater(b: Sizing, s: Slice, now: number, waiting = 0): number {
    const horizon = this.horizon(b);
    return Math.max(s.unit * (b.holds + waiting + 1), LOOKAHEAD * s.rate(now) * horizon);
  }

  /** A lease round trip to plan for (ms): the smoothed one plus two deviations, a recent peak when longer, at least MIN_HORIZON_MS. */
  private horizon(b: Sizing): number {
    return Math.max(b.srtt + 2 * b.rttvar, b.peakRtt, MIN_HORIZON_MS);
  }

  private roundTrip(b: Sizing, rtt: number): void {
    if (b.rtts++ === 0) {
      b.srtt = rtt;
      b.rttvar = rtt / 2;
    } else {
      b.rttvar = 0.75 * b.rttvar + 0.25 * Math.abs(b.srtt - rtt);
      b.srtt = 0.875 * b.srtt + 0.125 * rtt;
    }
    b.peakRtt = Math.max(rtt, 0.8 * b.peakRtt);
  }

  /** The lease is renewed (asked for more, which restarts its lifetime) from here on, before it lapses. */
  private renewAt(b: Book): number {
    return b.deadline - this.renewMargin(b);
  }

  private renewMargin(b: Sizing): number {
    return Math.max(LOOKAHEAD * this.horizon(b), this.settings.ttlMs / 4);
  }

  /** The largest estimate seen of each budget (the unit of what is asked for). */
  private estimates(b: Book, n: LeaseNeed): void {
    if (n.cost > b.spend.estimate) b.spend.estimate = n.cost;
    if (n.team !== null) {
      const tb = this.teamBook(n.team, b.holder);
      if (n.teamCost > tb.spend.estimate) tb.spend.estimate = n.teamCost;
      if (n.teamModel !== null) {
        const ts = tb.slice(n.teamModel);
        if (n.teamTokens > ts.estimate) ts.estimate = n.teamTokens;
      }
    }
    for (const w of n.windows) {
      const s = b.window(w);
      if (w.amount > s.estimate) s.estimate = w.amount;
    }
    if (n.model !== null) {
      const t = b.slice(n.model);
      if (n.tokens > t.estimate) t.estimate = n.tokens;
    }
  }

  /**
   * What is left of a slice of a user's book or a team's: nothing once its window, its lifetime or
   * its period ended, or while it is not proven under caps that changed.
   */
  private balance(b: Book | TeamBook, s: Slice, now: number): number {
    if (s instanceof WindowSlice) {
      // A window's slice is worth nothing once the window ended or its lifetime passed.
      if (now >= s.deadline || now >= s.end) return 0;
      if (this.renewing(b) && !this.valid(b, s)) return 0;
      return s.granted - s.used;
    }
    if (now >= b.deadline || now >= b.periodEndMs) return 0;
    if (this.renewing(b) && !this.valid(b, s)) return 0;
    return s === b.spend ? addDollars(s.granted, -s.used) : s.granted - s.used;
  }

  /**
   * What a slice holds beyond SPARE_KEEP planned round trips of its spend rate (each at least a
   * call per call in flight), once it holds more than SPARE_ABOVE of them and its rate is
   * measured (0 before b.spareAt): offered back with the next request.
   */
  private spare(b: Book, s: Slice, now: number): number {
    if (now < b.spareAt || b.lostAt > 0 || b.open || this.renewing(b)) return 0;
    return this.beyondTrips(b, s, this.balance(b, s, now), s === b.spend, now);
  }

  /** The same for the team's spend slice: every member's holders share the team's cap. */
  private teamSpare(tb: TeamBook, now: number): number {
    return now < tb.spareAt ? 0 : this.beyondTrips(tb, tb.spend, this.balance(tb, tb.spend, now), true, now);
  }

  /** The same for the team's slice of a model's token cap. */
  private teamSpareTokens(tb: TeamBook, s: Slice, now: number): number {
    return now < tb.spareAt ? 0 : this.beyondTrips(tb, s, this.balance(tb, s, now), false, now);
  }

  /** What `left` of a slice holds beyond SPARE_KEEP planned round trips, once it holds more than SPARE_ABOVE and its rate is measured. */
  private beyondTrips(b: Sizing, s: Slice, left: number, dollars: boolean, now: number): number {
    if (s.age(now) < RATE_MIN_WINDOW_MS) return 0;
    const trip = Math.max(s.unit * (b.holds + 1), s.rate(now) * this.horizon(b));
    if (!(trip > 0) || left < SPARE_ABOVE * trip) return 0;
    const keep = SPARE_KEEP * trip;
    return dollars ? toDollars(Math.floor(toNano(left) - toNano(keep))) : Math.floor(left - keep);
  }

  /**
   * The answer to an offer of a book's slices, the user's or its team's (null: refused, nothing
   * taken): what was not taken back is the slices' again. The next offer waits a planned round
   * trip after one the service took from, and twice as long as the last after one it took nothing of.
   */
  private spared(b: Book | TeamBook, model: string | null, spare: number, spareTokens: number, lease: LeaseWire | TeamLeaseWire | null): void {
    const returned = Math.min(spare, lease?.returned ?? 0);
    const returnedTokens = Math.min(spareTokens, lease?.tokens?.returned ?? 0);
    b.spend.granted = addDollars(b.spend.granted, addDollars(spare, -returned));
    if (model !== null && spareTokens > 0) b.slice(model).granted += spareTokens - returnedTokens;
    const took = returned > 0 || returnedTokens > 0;
    b.spareGap = took ? RATE_MIN_WINDOW_MS : Math.min(2 * b.spareGap, this.renewMargin(b));
    b.spareAt = Date.now() + (took ? this.horizon(b) : b.spareGap);
  }

  /** A plan or subscription change came after the request behind the last grant was sent. */
  private renewing(b: Sizing): boolean {
    return b.grantEpoch !== b.epoch;
  }

  /**
   * The slice, granted under the caps of `s.cap`, is within the caps in force now, in the lease's
   * period: a user's own plan's, or for a team's book or a member-scope window the team plan's.
   */
  private valid(b: Book | TeamBook, s: Slice): boolean {
    if (b instanceof TeamBook) {
      const t = b.entry;
      // No team plan in force: the member's calls need none of the team's slices.
      if (t.config === null) return true;
      if (s instanceof WindowSlice) {
        const cap = teamWindowCapOf(t, s.dimension);
        return cap !== null && cap >= s.cap;
      }
      if (t.periodEndMs !== b.periodEndMs) return false;
      const cap = s === b.spend ? teamCapOf(t) : teamTokenCapOf(t, s.model!);
      return cap === null || cap >= s.cap;
    }
    if (s instanceof WindowSlice) {
      // A member-scope window is capped by the team plan, not the member's own.
      const cap = b.memberWindows.get(s.key) === s ? memberWindowCapOf(b.entry, s.dimension) : windowCapOf(b.entry, s.dimension);
      return cap !== null && cap >= s.cap;
    }
    if (b.entry.periodEndMs !== b.periodEndMs) return false;
    const cap = capOf(b.entry, s.model);
    return cap === null || cap >= s.cap;
  }

  /**
   * Records a grant, of a user's slices or a team's: the caps it was asked under (unknown when a
   * plan change came while it was on its way). A grant asked under the new plan proves the dollars
   * and the model's tokens it names within the new caps (the service counted what this holder
   * holds); other models' token slices are not, so they are kept only as far as used, and asked
   * for again.
   */
  private granted(b: Book | TeamBook, epoch: number, spendCap: number | null, model: string | null, tokenCap: number | null): void {
    const current = epoch === b.epoch;
    if (current && this.renewing(b)) for (const [m, t] of b.tokens) if (m !== model) t.granted = Math.min(t.granted, t.used);
    b.spend.cap = current ? (spendCap ?? Infinity) : Infinity;
    if (model !== null) b.slice(model).cap = current ? (tokenCap ?? Infinity) : Infinity;
    if (current) b.grantEpoch = epoch;
  }

  private teamBook(t: TeamEntry, holder: string): TeamBook {
    const key = teamKey(holder, t.teamId);
    let tb = this.teams.get(key);
    if (!tb) {
      tb = new TeamBook(t.teamId, t, holder === this.holder);
      this.teams.set(key, tb);
      // A user who joined a team while its book had a holder id of its own: the team's slices of
      // that holder are this book's alone, and go with it.
      if (holder !== this.holder) {
        let keys = this.teamsOf.get(holder);
        if (!keys) this.teamsOf.set(holder, (keys = new Set()));
        keys.add(key);
      }
    }
    tb.entry = t;
    return tb;
  }

  private teamTokensShort(tb: TeamBook, n: LeaseNeed, now: number): boolean {
    const s = tb.tokens.get(n.teamModel!);
    const left = s === undefined ? 0 : this.balance(tb, s, now);
    return left <= 0 || (n.whole && left < n.teamTokens);
  }

  private teamSpendShort(tb: TeamBook, n: LeaseNeed, now: number): boolean {
    const left = this.balance(tb, tb.spend, now);
    return left <= 0 || (n.whole && left < n.teamCost);
  }

  /** The team's slices do not cover the call: its spend slice or one of its windows'. */
  private teamShort(tb: TeamBook, n: LeaseNeed, now: number): boolean {
    if (n.teamSpend && this.teamSpendShort(tb, n, now)) return true;
    if (n.teamModel !== null && this.teamTokensShort(tb, n, now)) return true;
    return n.teamWindows.some((w) => {
      const s = tb.windows.get(w.key);
      if (s !== undefined && now < s.unlimitedUntil) return false;
      const left = s === undefined ? 0 : this.balance(tb, s, now);
      return left <= 0 || (w.whole && left < w.amount);
    });
  }

  /**
   * Records the service's answer for the team's slice: a grant sets the slice to what the team's
   * counter holds for this holder and extends its lifetime; a refusal holds further asks back for
   * a moment; no team slice (no cap, or the user left the team) stops asking for a minute.
   */
  private teamGranted(
    tb: TeamBook,
    team: TeamEntry,
    t: TeamLeaseWire | null,
    /** What was asked, and the team plan's caps in force when it was sent (and how many changes had been seen then). */
    asked: { want: number; tokensWant: number; windows: readonly AskedWindow[]; epoch: number; spendCap: number | null; tokenCap: number | null },
    sentAt: number,
    ttlMs: number,
    rtt: number,
    /** The request asked no need: a live lease that grants nothing is kept for another lifetime. */
    renewed: boolean,
  ): void {
    this.roundTrip(tb, rtt);
    const now = Date.now();
    const limited = t !== null && (t.spend_limited || (t.tokens ?? null) !== null || (t.windows ?? []).some((w) => w.limited));
    // Nothing of the team is capped (or the user left it): unless the plan caps tokens of models not asked for yet.
    if (!limited) {
      if (t === null || !hasKeys(team.config?.model_limits ?? {})) tb.unlimitedUntil = now + 60_000;
      return;
    }
    const periodEnd = Date.parse(t.period_end);
    if (periodEnd !== tb.periodEndMs) {
      // A new period: the slices start from what the service holds for it. What this process
      // used of the last one counts there, not here: kept, it held the new period's first grants.
      tb.spend.granted = tb.spend.used = 0;
      tb.spend.answered = false;
      tb.tokens.clear();
      tb.periodEndMs = periodEnd;
    }
    const current = asked.epoch === tb.epoch;
    let full = this.windowsGranted(tb, asked.windows, t.windows ?? [], sentAt, ttlMs, current, renewed);
    if ((t.windows ?? []).some((w) => w.added > 0)) tb.leased = true;
    const tokens = t.tokens ?? null;
    const model = tokens?.model ?? null;
    adopted(tb, tb.spend, t.granted, t.added);
    if (tokens !== null) adopted(tb, tb.slice(tokens.model), tokens.granted, tokens.added);
    const spendAdded = t.spend_limited && asked.want > 0 ? t.added : 0;
    if (spendAdded > 0 || (tokens !== null && tokens.added > 0)) {
      // The counter's lease as written: a lapsed one restarted in every budget.
      if (sentAt >= tb.deadline) for (const s of tb.tokens.values()) s.granted = Math.min(s.granted, s.used);
      if (spendAdded > 0) tb.spend.granted = t.granted;
      if (tokens !== null) tb.slice(tokens.model).granted = tokens.granted;
      this.granted(tb, asked.epoch, asked.spendCap, model, asked.tokenCap);
      tb.deadline = sentAt + ttlMs;
      tb.retryAt = 0;
      tb.leased = true;
    } else {
      // A live team lease asked again for no need is kept for another lifetime.
      if (renewed && (asked.want > 0 || asked.tokensWant > 0) && sentAt < tb.deadline) tb.deadline = sentAt + ttlMs;
      // Refused under the team plan in force with something left of its caps: what every holder holds is within them (as for a user's lease).
      if (current && this.renewing(tb) && roomLeft(t, model)) this.granted(tb, asked.epoch, asked.spendCap, model, asked.tokenCap);
      if (t.spend_limited && asked.want > 0 && (t.remaining <= 0 || this.balance(tb, tb.spend, now) <= 0)) tb.retryAt = now + OPEN_RETRY_MS;
    }
    if (t.spend_limited && asked.want > 0) full &&= t.added >= asked.want - 1e-9;
    if (tokens !== null && asked.tokensWant > 0) full &&= tokens.added >= asked.tokensWant;
    tb.full = full;
  }

  /**
   * What a request asks of each window slice in `slices` that runs low, is needed by a waiting
   * call (`needs`), or nears its lifetime's end; ended windows' slices go.
   */
  private windowAsks(b: Book | TeamBook, slices: Map<string, WindowSlice>, needs: Map<string, number>, waiting: number, renew: boolean, sentAt: number, capOf: (s: WindowSlice) => number | null) {
    const windows: AskedWindow[] = [];
    const asks: Record<string, unknown>[] = [];
    for (const s of slices.values()) {
      if (s.end <= sentAt) {
        slices.delete(s.key);
        continue;
      }
      if (sentAt < s.unlimitedUntil) continue;
      // Held back after a refusal, unless a waiting call needs no more than the service had left.
      const need = needs.get(s.key) ?? 0;
      if (sentAt < s.retryAt && !(need > 0 && need <= s.leftAtService)) continue;
      const cap = capOf(s);
      if (cap === null) continue;
      const w = this.asked(b, s, need, waiting, renew || sentAt >= s.deadline - this.renewMargin(b), sentAt, cap);
      if (w.want <= 0) continue;
      const money = s.dimension.startsWith("spend:");
      const wire = (x: number) => (money ? toDollars(Math.ceil(x)) : Math.ceil(x));
      windows.push({ s, want: Math.ceil(w.want), cap });
      asks.push({ dimension: s.dimension, window_start: s.start === null ? null : new Date(s.start).toISOString(), need: wire(w.need), want: wire(w.want) });
    }
    return { windows, asks };
  }

  private book(e: UserEntry): Book {
    let b = this.books.get(e.userId);
    if (!b) {
      // A member's book shares the team's slices under this process's holder id, so a book made
      // again after its user's was forgotten (forgettable()) names the holder its last one did:
      // what that one held is counted as used (adopted()). Any other has a holder id of its own,
      // which nothing was granted before.
      const shared = leasedTeam(e) !== null;
      b = new Book(e.userId, e, shared ? this.holder : `${this.holder}-${(++this.made).toString(36)}`, shared);
      this.books.set(e.userId, b);
    }
    b.entry = e;
    return b;
  }

  /** Users this process keeps a book for. */
  get size(): number {
    return this.books.size;
  }

  /** Teams this process keeps a book of slices for. */
  get teamSize(): number {
    return this.teams.size;
  }

  /**
   * A book goes once no call runs on it or waits for it, it has been idle for idleMs, and it
   * holds nothing unused (releaseIdle() gave it back), nor does a team book it gives back
   * (under its holder, or through its lease): an idle user costs this process nothing, however
   * many users it served. A member's book made again finds what this one held (adopted()).
   */
  private forgettable(b: Book, now: number): boolean {
    if (b.holds > 0 || b.waits > 0 || b.asking !== null || b.lostAt > 0 || now - b.lastUse < this.settings.idleMs) return false;
    if (this.holdsUnused(b, now)) return false;
    const busy = (tb: TeamBook) => tb.holds > 0 || tb.asking !== null || this.holdsUnused(tb, now);
    const team = leasedTeam(b.entry);
    const tb = team === null ? undefined : this.teams.get(teamKey(b.holder, team.teamId));
    if (tb !== undefined && tb.via === b.userId && busy(tb)) return false;
    for (const key of this.teamsOf.get(b.holder) ?? []) if (busy(this.teams.get(key)!)) return false;
    return true;
  }

  /**
   * A team book under this process's holder goes on the same terms, once idle (given back through
   * a member's lease). What it holds can go back only through the lease of a member of the team:
   * with none left to do it (the last one moved to another team), it goes once its slices ended,
   * and the service lets them lapse.
   */
  private teamForgettable(tb: TeamBook, now: number): boolean {
    if (tb.holds !== 0 || tb.asking !== null || now - tb.lastUse < this.settings.idleMs) return false;
    if (!this.holdsUnused(tb, now)) return true;
    const via = tb.via === null ? undefined : this.books.get(tb.via);
    if (via !== undefined && leasedTeam(via.entry)?.teamId === tb.teamId) return false;
    return now >= tb.deadline && [...tb.windows.values()].every((s) => now >= s.deadline);
  }

  private forget(b: Book): void {
    this.books.delete(b.userId);
    for (const key of this.teamsOf.get(b.holder) ?? []) this.teams.delete(key);
    this.teamsOf.delete(b.holder);
  }
}

/**
 * The answer left something of each cap it counted (the spend cap, the model's token cap): what
 * every holder holds, this one's slice with it, is within that cap (what remains is never told below 0).
 */
function roomLeft(l: LeaseWire | TeamLeaseWire, model: string | null): boolean {
  const tokens = l.tokens ?? null;
  return (!l.spend_limited || l.remaining > 0) && (model === null || tokens === null || tokens.remaining > 0);
}

/** A team book's key: the holder its slices are granted to, and the team. */
function teamKey(holder: string, teamId: string): string {
  return `${holder}|${teamId}`;
}

/** A lease holds something granted and not used of these slices: release() gives it back. */
function unusedIn(b: Book, slices: readonly Slice[]): boolean {
  return b.leaseId !== null && slices.some((s) => s.granted > s.used);
}

/** The cap (times hard_gate_at) of the user's plan in force on dollars (model null) or on a model's tokens; null when uncapped. */
function capOf(e: UserEntry, model: string | null): number | null {
  const plan = e.config;
  if (plan === null) return null;
  const max = model === null ? plan.max_spend_per_period : (own(plan.model_limits, model)?.max_tokens_per_period ?? null);
  return max === null ? null : max * plan.hard_gate_at;
}

/**
 * The period spend cap (times hard_gate_at) a user's lease grants against: with prepaid credits
 * the allowance plus what the period drew plus the balance, as the service counts it; null when
 * uncapped.
 */
function spendCapWithCredits(e: UserEntry): number | null {
  const plan = e.config;
  if (plan === null || plan.max_spend_per_period === null) return null;
  return (e.credits === null ? plan.max_spend_per_period : e.credits.cap) * plan.hard_gate_at;
}

/** The team's token cap of a model (times hard_gate_at); null when the team plan does not cap it. */
function teamTokenCapOf(t: TeamEntry, model: string): number | null {
  const plan = t.config!;
  const limit = own(plan.model_limits, model);
  return limit === undefined ? null : limit.max_tokens_per_period * plan.hard_gate_at;
}

/** A call the team's token slice does not cover: blocked by the team's token cap of its model until the team's period ends. */
function teamTokenRefusal(t: TeamEntry, model: string, tokens: number): GuardResult {
  const cap = teamTokenCapOf(t, model)!;
  const current = (own(t.tokensByModel, model) ?? 0) + (own(t.reservedTokens, model) ?? 0);
  return {
    resets_at: new Date(t.periodEndMs).toISOString(),
    status: "hard_gate",
    gate_reason: `team:model_limit:${model}`,
    usage_pct: cap > 0 ? Math.max(1, ratio(current, cap)) : 1,
    current_value: current,
    limit_value: cap,
    message: `team token cap of ${cap} for ${model} reached: no budget lease covers this call (${tokens} tokens) across replicas`,
  };
}

/** The team's period spend cap (times hard_gate_at); null when the team plan has none. */
function teamCapOf(t: TeamEntry): number | null {
  const plan = t.config!;
  return plan.max_spend_per_period === null ? null : plan.max_spend_per_period * plan.hard_gate_at;
}

/**
 * What the first request asks of a budget while nothing is known of its calls (estimated at 0,
 * none finished yet): a share of the cap, as much as `calls` equal calls would spend of it.
 */
function firstSlice(cap: number | null, calls: number): number {
  return cap === null || !Number.isFinite(cap) ? 0 : cap / calls;
}

/** The member's team when its plan caps the team's period spend or has team-scope windows (the team slices a call needs), else null. */
function leasedTeam(e: UserEntry): TeamEntry | null {
  const t = e.team;
  if (t === null || t.config === null) return null;
  return t.config.max_spend_per_period !== null || hasTeamWindows(t.config) || hasKeys(t.config.model_limits) ? t : null;
}

/** Whether a record has an own key (without listing them: this runs on every call). */
function hasKeys(o: object): boolean {
  for (const k in o) if (Object.hasOwn(o, k)) return true;
  return false;
}

function hasTeamWindows(plan: PlanConfig): boolean {
  for (const l of plan.limits) if (!memberScoped(l)) return true;
  return false;
}

/** A call the team's slice does not cover: blocked by the team's cap until the team's period ends. */
function teamRefusal(t: TeamEntry, cost: number): GuardResult {
  const plan = t.config!;
  const cap = toDollars(Math.round(toNano(plan.max_spend_per_period!) * plan.hard_gate_at));
  const current = addDollars(t.periodCost, t.reservedCost);
  return {
    resets_at: plan.prepaid === true ? null : new Date(t.periodEndMs).toISOString(),
    status: "hard_gate",
    gate_reason: "team:total_spend",
    usage_pct: cap > 0 ? Math.max(1, ratio(current, cap)) : 1,
    current_value: current,
    limit_value: cap,
    message: `team period spend cap of $${cap.toFixed(2)} reached: no budget lease covers this call (estimate $${cost.toFixed(4)}) across replicas`,
  };
}

/**
 * A call no lease covers: blocked until the period ends (the caps leases cover are the period's),
 * or for good when the period spend cap is prepaid credits with no allowance (only a grant lifts it).
 */
function refusal(e: UserEntry, reason: string, current: number, cap: number, message: string): GuardResult {
  const never = reason === "total_spend" && e.config?.prepaid === true;
  return {
    resets_at: never ? null : new Date(e.periodEndMs).toISOString(),
    status: "hard_gate",
    gate_reason: reason,
    usage_pct: cap > 0 ? Math.max(1, ratio(current, cap)) : 1,
    current_value: current,
    limit_value: cap,
    message,
  };
}

/** The windows of the plan's limits a call of `model` counts in now, one per dimension (two limits of one dimension share a slice). */
function windowNeeds(e: UserEntry, model: string | null, reserved: ReservationAmount, now = Date.now()): WindowNeed[] {
  const plan = e.config;
  if (plan === null || plan.limits.length === 0) return NO_WINDOWS;
  e.advanceWindows(now);
  return needsOf(plan, e.counters, model, reserved, "all");
}

/** The same for the team plan's team-scope windows (a member's call counts in the team's). */
function teamWindowNeeds(t: TeamEntry, model: string | null, reserved: ReservationAmount, now = Date.now()): WindowNeed[] {
  const plan = t.config;
  if (plan === null || !hasTeamWindows(plan)) return NO_WINDOWS;
  t.advanceWindows(now);
  return needsOf(plan, t.counters, model, reserved, "team");
}

/** The same for the member-scope windows of the user's team plan (the user's own, by its member counters). */
function memberWindowNeeds(e: UserEntry, model: string | null, reserved: ReservationAmount, now = Date.now()): WindowNeed[] {
  const plan = e.team?.config ?? null;
  if (plan === null || !hasMemberWindows(plan)) return NO_WINDOWS;
  e.advanceWindows(now);
  return needsOf(plan, e.memberCounters, model, reserved, "member");
}

function hasMemberWindows(plan: PlanConfig): boolean {
  for (const l of plan.limits) if (memberScoped(l)) return true;
  return false;
}

/** Which limits of a plan: all (a user's own plan), or a team plan's of one scope. */
type Scope = "all" | "team" | "member";
const inScope = (l: PlanLimit, scope: Scope) => scope === "all" || memberScoped(l) === (scope === "member");

/** The windows of `plan`'s limits of `scope` a call of `model` counts in, by their counters. */
function needsOf(plan: PlanConfig, counters: readonly LimitCounter[], model: string | null, reserved: ReservationAmount, scope: Scope): WindowNeed[] {
  const limits = plan.limits;
  const out: WindowNeed[] = [];
  for (let i = 0; i < limits.length; i++) {
    const l = limits[i]!;
    if (l.model != null && l.model !== model) continue;
    if (!inScope(l, scope)) continue;
    const c = counters[i]!;
    const dimension = dimensionOf(l);
    const rolling = l.window === "rolling";
    const key = rolling ? `${dimension}|r` : `${dimension}|${c.start}`;
    if (out.some((w) => w.key === key)) continue;
    const requests = l.metric === "requests";
    const amount = l.metric === "spend" ? toNano(reserved.cost) : l.metric === "tokens" ? reserved.tokens : 1;
    out.push({ key, dimension, start: rolling ? null : c.start, end: rolling ? Infinity : c.end, amount, limit: i, whole: requests || reserved.exact });
  }
  return out;
}

/** The strictest hard mark (in the limit's unit) of the plan in force's limits of a dimension; null when it has none. */
function windowCapOf(e: UserEntry, dimension: string): number | null {
  return e.config === null ? null : capOfDimension(e.config, dimension, "all");
}

/** The same among the team plan's team-scope limits. */
function teamWindowCapOf(t: TeamEntry, dimension: string): number | null {
  return t.config === null ? null : capOfDimension(t.config, dimension, "team");
}

/** The same among the member-scope limits of the user's team plan. */
function memberWindowCapOf(e: UserEntry, dimension: string): number | null {
  const plan = e.team?.config ?? null;
  return plan === null ? null : capOfDimension(plan, dimension, "member");
}

function capOfDimension(plan: PlanConfig, dimension: string, scope: Scope): number | null {
  let cap: number | null = null;
  for (const l of plan.limits) {
    if (dimensionOf(l) !== dimension || !inScope(l, scope)) continue;
    const mark = hardMarkOf(l, plan.hard_gate_at);
    cap = cap === null ? mark : Math.min(cap, mark);
  }
  return cap;
}

/** A call a window's slice does not cover: blocked by that limit (of `plan`, `reason` naming it) until its window lets calls through again. */
function windowRefusal(plan: PlanConfig, counters: readonly LimitCounter[], w: WindowNeed, reason: (name: string) => string): GuardResult {
  const l = plan.limits[w.limit]!;
  const c = counters[w.limit]!;
  const money = l.metric === "spend";
  const mark = hardMarkOf(l, plan.hard_gate_at);
  const used = usedOf(l, c) + c.held;
  const current = money ? toDollars(used) : used;
  const cap = money ? toDollars(mark) : mark;
  const resets = resetsOf(l, c);
  const unit = money ? "dollars" : l.metric;
  return {
    resets_at: resets === null ? null : new Date(resets).toISOString(),
    status: "hard_gate",
    gate_reason: reason(l.name),
    usage_pct: mark > 0 ? Math.max(1, ratio(used, mark)) : 1,
    current_value: current,
    limit_value: cap,
    message: `limit "${l.name}" (${cap} ${unit} per ${l.window === "rolling" ? `${l.duration_minutes ?? 0} minutes` : l.window}) reached: no budget lease covers this call across replicas`,
  };
}

/** A window slice asked for by a request: what was asked and under which cap. */
interface AskedWindow {
  s: WindowSlice;
  want: number;
  cap: number | null;
}

/** Whether a lease request's body asks a need anywhere: its spend, tokens, windows, the team's. */
function asksNeed(body: Record<string, unknown>): boolean {
  const needs = (part: unknown): boolean => {
    if (part === null || typeof part !== "object") return false;
    const p = part as { need?: unknown; need_tokens?: unknown; windows?: { need: unknown }[]; member_windows?: { need: unknown }[] };
    return Number(p.need ?? 0) > 0 || Number(p.need_tokens ?? 0) > 0 || [...(p.windows ?? []), ...(p.member_windows ?? [])].some((w) => Number(w.need) > 0);
  };
  return needs(body) || needs(body.team);
}

/** A window a call needs is short and the service had nothing left of it when last asked. */
function windowsExhausted(slices: Map<string, WindowSlice>, needs: readonly WindowNeed[], now: number, left: (s: WindowSlice) => number): boolean {
  for (const w of needs) {
    const s = slices.get(w.key);
    if (s === undefined || now >= s.retryAt) continue;
    const l = left(s);
    // Refused without asking only when what the service had left cannot cover the call either.
    if ((l <= 0 || (w.whole && l < w.amount)) && (s.leftAtService <= 0 || (w.whole && s.leftAtService < w.amount))) return true;
  }
  return false;
}

/** A hold's amounts given back to the window slices it was taken from. */
function giveBack(slices: Map<string, WindowSlice>, needs: readonly WindowNeed[]): void {
  for (const w of needs) {
    const s = slices.get(w.key);
    if (s) s.used = Math.max(0, s.used - w.amount);
  }
}

/** The slices of windows that have not ended. */
function liveWindows(slices: Map<string, WindowSlice>, now: number): WindowSlice[] {
  return [...slices.values()].filter((s) => s.end > now);
}

/** A slice as a release names what was used of it. */
function windowUse(s: WindowSlice) {
  return {
    dimension: s.dimension,
    window_start: s.start === null ? null : new Date(s.start).toISOString(),
    used: s.dimension.startsWith("spend:") ? toDollars(Math.ceil(s.used)) : Math.ceil(s.used),
  };
}

/** Of refusals, the one that allows a call again last: a null resets_at (never by itself) is latest; ties keep the first. */
export function liftsLast(refused: readonly GuardResult[]): GuardResult | null {
  let last: GuardResult | null = null;
  const at = (r: GuardResult) => (r.resets_at == null ? Infinity : Date.parse(r.resets_at));
  for (const r of refused) if (last === null || at(r) > at(last)) last = r;
  return last;
}
