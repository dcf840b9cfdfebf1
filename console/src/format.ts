const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
const percent = new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 1 });
// A gate's fraction as set (0.855 is 85.5%, not 86%): a plan's own figure, never rounded.
const gatePercent = new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 6 });

// Money is kept to the nano-dollar: shown whole, never rounded to a cent.
const exactMoney = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 9 });
const signedExactMoney = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 9, signDisplay: "exceptZero" });
/** Dollars to the nano-dollar the service keeps ($4.499876543, $5.00): every amount the console shows (a spend of $9.99995 is not "$10.00"). */
export const fmtExactMoney = (n: number | null | undefined) => (n == null ? "—" : exactMoney.format(n));
/** The same, signed (+$5.00, −$0.25): a ledger entry's amount. */
export const fmtSignedMoney = (n: number | null | undefined) => (n == null ? "—" : signedExactMoney.format(n));
export const fmtInt = (n: number | null | undefined) => (n == null ? "—" : integer.format(n));
/** "2 users", "1 user", with "· 3 teams" when teams are on it too: what a plan's subscribers are. */
export const fmtSubscribers = (users: number, teams: number) =>
  `${integer.format(users)} ${users === 1 ? "user" : "users"}${teams > 0 ? ` · ${integer.format(teams)} ${teams === 1 ? "team" : "teams"}` : ""}`;
/** Tokens: exact below 10,000, compact above (12.3K, 4.5M), the exact figure on hover. */
export const fmtTokens = (n: number | null | undefined) => (n == null ? "—" : n < 10_000 ? integer.format(n) : compact.format(n));
/** A gate's fraction (soft_gate_at, hard_gate_at) as a percentage, exactly: 85.5%. */
export const fmtGateAt = (ratio: number) => gatePercent.format(ratio);
export const fmtPct = (ratio: number | null | undefined) => (ratio == null || !Number.isFinite(ratio) ? "—" : percent.format(ratio));

const local = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
// Billing periods are UTC instants (the subscription form's dates are UTC days): a period's
// bounds are shown in UTC, or a June period would read "May 31 – Jun 30" west of Greenwich.
const utcDate = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
const utcDateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium", timeZone: "UTC" });
/** A time in the viewer's zone; the UTC form is its title (hover). */
export const fmtTime = (iso: string | null | undefined) => (iso ? local.format(new Date(iso)) : "—");
/** A UTC day (a billing period's bound), whatever the viewer's zone. */
export const fmtDate = (iso: string | null | undefined) => (iso ? utcDate.format(new Date(iso)) : "—");
/** Whether an instant falls on a UTC midnight (a period bound the subscription form's date inputs can say exactly). */
export const atUtcMidnight = (iso: string) => new Date(iso).getTime() % 86_400_000 === 0;
/** A period's bound in UTC: its day, and its time to the second when it is not midnight ("Jan 15, 2025, 10:32:11 AM"). */
export const fmtPeriodBound = (iso: string | null | undefined) => (!iso ? "—" : atUtcMidnight(iso) ? utcDate.format(new Date(iso)) : utcDateTime.format(new Date(iso)));
/** A time in the viewer's zone, for a title (hover) beside a UTC figure. */
export const localTitle = (iso: string | null | undefined) => (iso ? `${local.format(new Date(iso))} (your time)` : undefined);
export const utcTitle = (iso: string | null | undefined) => (iso ? new Date(iso).toISOString().replace(".000Z", "Z") + " (UTC)" : undefined);

/** Change against the previous period, as a signed percentage ("new" when there was nothing). */
export function change(current: number, previous: number): { text: string; direction: "up" | "down" | "flat" } {
  if (previous === 0) return current === 0 ? { text: "no change", direction: "flat" } : { text: "new this period", direction: "up" };
  const ratio = (current - previous) / previous;
  if (Math.abs(ratio) < 0.0005) return { text: "no change", direction: "flat" };
  return { text: `${ratio > 0 ? "+" : "−"}${percent.format(Math.abs(ratio))} vs previous`, direction: ratio > 0 ? "up" : "down" };
}
