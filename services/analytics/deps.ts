import type { JobScheduler } from "@meter/lib/jobs";
import type { Logger } from "@meter/lib/logger";
import type { PlansPort } from "./adapters/plans.ts";
import type { RetentionPolicy } from "./domain/retention-policy.ts";
import type { FaultHooks, Roller } from "./flows/roller.ts";
import type { BaseStore } from "./store/bases.ts";
import type { DirtyStore } from "./store/dirty.ts";
import type { LedgerStore } from "./store/ledger.ts";
import type { RollupStore } from "./store/rollups.ts";
import type { UserDayCache } from "./store/user-day-cache.ts";
import type { AnswersSeen, WindowAnswerStore } from "./store/window-answers.ts";

export interface AnalyticsDeps {
  ledger: LedgerStore;
  /** Facts for days before the ledger window (README, "Late facts"). */
  late: LedgerStore;
  bases: BaseStore;
  dirty: DirtyStore;
  rollups: RollupStore;
  /** Days' per-user columns already read, by rollup version (store/user-day-cache.ts). */
  userDays: UserDayCache;
  /** Each window's per-user answers at the versions they were folded at (store/window-answers.ts). */
  windowAnswers: WindowAnswerStore;
  /** The answers' versions this process knows are stored. */
  answersSeen: AnswersSeen;
  roller: Roller;
  scheduler: JobScheduler;
  /** This process runs the roll and retention jobs (false: tests roll by hand). */
  rollJobs: boolean;
  retention: RetentionPolicy;
  plans: PlansPort;
  logger: Logger;
  /** The clock the windows are computed from. */
  now: () => Date;
  faults?: FaultHooks;
}
