import type { Logger } from "@meter/lib/logger";
import type { PlansPort } from "./adapters/plans.ts";
import type { FaultHooks, Roller } from "./roller.ts";
import type { DirtyStore } from "./store/dirty.ts";
import type { LedgerStore } from "./store/ledger.ts";
import type { RollupStore } from "./store/rollups.ts";

export interface AnalyticsDeps {
  ledger: LedgerStore;
  dirty: DirtyStore;
  rollups: RollupStore;
  roller: Roller;
  plans: PlansPort;
  logger: Logger;
  /** The clock the windows are computed from. */
  now: () => Date;
  faults?: FaultHooks;
}
