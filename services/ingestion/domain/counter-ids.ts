/**
 * "<product>|<period start>|<user>": a period is found by its start, so a window rolled on
 * from a lapsed subscription and the renewal recorded late for the same start share one
 * counter (their ends may differ by the length of a month).
 */
export function counterId(productId: string, userId: string, start: Date): string {
  return `${productId}|${start.toISOString()}|${userId}`;
}

/** "<product>|month|<YYYY-MM>|<user>": apart from period counters even when a period is a calendar month. */
export function monthCounterId(productId: string, userId: string, monthStart: Date): string {
  return `${productId}|month|${monthStart.toISOString().slice(0, 7)}|${userId}`;
}
