import type { LeaseShare } from "./lease-settlement.ts";
import type { WindowShare } from "../windows/shares.ts";
import type { Totals } from "./totals.ts";

/** One counter's share of a job: the sums of the job's events for that counter. */
export interface CounterDelta extends LeaseShare {
  id: string;
  productId: string;
  userId: string;
  start: Date;
  end: Date;
  add: Totals;
  /**
   * Of `add.cost`, what events whose plan draws credits spent (nano-dollars; a user's period
   * counters only): CounterDoc.credited_nano.
   */
  credited?: number;
  /** The part of `add` that is the month share (see CounterDoc.month in store/counters.ts). */
  month?: Totals;
  /**
   * Window counts kept in the counter itself (`w`, as a window document's: CounterDoc.w), by
   * field: a team's windows that lie within its billing period (teams/count.ts).
   */
  windows?: Map<string, WindowShare>;
  /**
   * What those window counts settle against the budget leases' window slices the counter holds
   * (field path to increment), and whether they lower what remains for every holder (then the
   * version is bumped): windows/slices.ts windowSettlement.
   */
  windowSettle?: { spent: Record<string, number>; bump: boolean };
}
