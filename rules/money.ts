/**
 * Money of the API (docs/api.md), exact: amounts are summed as whole nano-dollars (1 n$ = 1e-9 $), never as
 * float dollars (0.00125 added 200 times as doubles is 0.2500000000000001). The wire keeps
 * dollars as JSON numbers: each amount that goes out is an exact sum converted once by
 * `toDollars`, which gives the double nearest to it (1250000000 n$ -> 1.25), so it prints as
 * the decimal it is. An amount that comes in (a price, a cap, a client's cost) is taken to the
 * unit once by `toNano`.
 *
 * Whole numbers up to 2^53 n$ (about $9,007,199) are exact in a JS number, so a sum is exact
 * inside up to that much. On the wire, dollars as doubles hold every nano-dollar up to 2^23
 * dollars ($8,388,608): `toNano(toDollars(n))` gives n back that far (`toNano` reads the exact
 * value's digits above 2^51 n$, where dollars x 1e9 carries its own error); beyond it an amount
 * written out is the double nearest to it.
 */

/** Nano-dollars in a dollar. */
export const NANOS_PER_DOLLAR = 1_000_000_000;

/**
 * The most a plan's amount may be, in dollars (a cap, a rate per 1K tokens, a tool's cost): far
 * above any real one, and low enough that no call's cost computed from it overflows to Infinity
 * (a rate of 1e300 made every event of the plan unpriceable, refused at ingestion).
 */
export const MAX_PLAN_DOLLARS = 1e9;

/** Digits a ratio (usage_pct) is rounded to: 1e-6. */
export const RATIO_SCALE = 1_000_000;

/**
 * Below this many nano-dollars (2^51, about $2.25M) dollars x 1e9 lies within half a nano-dollar of
 * the whole nano-dollars the amount stands for, so rounding the product is exact. Above it the
 * product's own error reaches half a unit ($4,337,334.005927324 gave one nano-dollar more).
 */
const EXACT_PRODUCT = 2 ** 51;

/** Dollars to whole nano-dollars, rounded to the nearest (half away from zero). */
export function toNano(dollars: number): number {
  const n = dollars * NANOS_PER_DOLLAR;
  if (n < EXACT_PRODUCT && n > -EXACT_PRODUCT) return n < 0 ? -Math.round(-n) : Math.round(n);
  // Larger amounts (rare: the product above is the hot path) from the decimal digits of the exact
  // value, rounded once by toFixed (half away from zero); past 1e21 toFixed writes an exponent.
  return Math.abs(dollars) < 1e21 ? Number(dollars.toFixed(9).replace(".", "")) : Math.round(n);
}

/** Whole nano-dollars to dollars: the double nearest to the exact amount. */
export function toDollars(nano: number): number {
  return nano / NANOS_PER_DOLLAR;
}

/** A dollar amount rounded to the unit (what every amount that goes out is). */
export function roundDollars(dollars: number): number {
  return toDollars(toNano(dollars));
}

/** A positive amount too small for the unit: kept, it would be $0, and a cap of it would block every call. */
export function belowUnit(dollars: number): boolean {
  return dollars > 0 && toNano(dollars) === 0;
}

/** The words for an amount refused by belowUnit. */
export const BELOW_UNIT = "must be 0 or at least 0.000000001 (a nano-dollar, the unit amounts are kept in)";

/** a + b of two dollar amounts, added as whole nano-dollars: the exact sum, rounded to the unit. */
export function addDollars(a: number, b: number): number {
  return toDollars(toNano(a) + toNano(b));
}

/** part / whole, rounded to RATIO_SCALE: usage_pct without the noise of float sums (1.0499999999999998 -> 1.05). */
export function ratio(part: number, whole: number): number {
  return Math.round((part / whole) * RATIO_SCALE) / RATIO_SCALE;
}

/** A ratio given by a caller (a gate event's usage_pct), rounded as `ratio` rounds. */
export function roundRatio(r: number): number {
  return Math.round(r * RATIO_SCALE) / RATIO_SCALE;
}

/**
 * round((input x rateIn + output x rateOut) / 1000) in nano-dollars: the cost of one call's
 * tokens, with rates in nano-dollars per 1K tokens. The products are exact (BigInt past 2^53)
 * and the one rounding is half up, so every implementation gets the same unit.
 */
export function tokenCostNano(inputTokens: number, outputTokens: number, rateInNano: number, rateOutNano: number): number {
  if (![inputTokens, outputTokens, rateInNano, rateOutNano].every(Number.isSafeInteger)) {
    // Not whole (a caller's odd token count): priced as given, rounded once.
    return Math.round((inputTokens * rateInNano + outputTokens * rateOutNano) / 1000);
  }
  const sum = inputTokens * rateInNano + outputTokens * rateOutNano;
  if (Number.isSafeInteger(sum) && sum >= 0) {
    const rest = sum % 1000;
    return (sum - rest) / 1000 + (rest >= 500 ? 1 : 0);
  }
  const exact = BigInt(inputTokens) * BigInt(rateInNano) + BigInt(outputTokens) * BigInt(rateOutNano);
  const half = exact >= 0n ? 500n : -500n;
  return Number((exact + half) / 1000n);
}
