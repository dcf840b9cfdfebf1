import type { JobScheduler } from "@meter/lib/jobs";
import type { Logger } from "@meter/lib/logger";
import type { KnownUser, UserDirectory } from "./adapters/plans.ts";
import type { RetentionPolicy } from "./domain/retention-policy.ts";
import type { ArrivalStore } from "./late-changes/arrivals.ts";
import type { LateChanges } from "./late-changes/pending.ts";
import type { CrossingStore } from "./thresholds/store.ts";
import type { CounterStore } from "./store/counters.ts";
import type { WindowStore } from "./windows/store.ts";
import type { GateEventStore } from "./store/gate-events.ts";
import type { LeaseStore } from "./leases/store.ts";
import type { TeamLeaseStores } from "./leases/team.ts";
import type { WindowLeaseStore } from "./windows/lease-store.ts";
import type { JobStore } from "./store/jobs.ts";
import type { OutboxStore } from "./store/outbox.ts";
import type { UsageEventStore } from "./store/usage-events.ts";
import type { CreditStore } from "./credits/store.ts";

export interface IngestionLimits {
  /** Most events accepted in one batch (usage or gate events). */
  maxBatchEvents: number;
}

export interface IngestionDeps {
  events: UsageEventStore;
  counters: CounterStore;
  /** Counters of the windows of plans' limits, one document per user, in collection counters (windows/store.ts). */
  windows: WindowStore;
  /** Teams' period and month counters and window documents (both in collection team_counters): teams/. */
  teamCounters: CounterStore;
  teamWindows: WindowStore;
  arrivals: ArrivalStore;
  /** Late changes seen and followed (late-changes/follow.ts). */
  lateChanges: LateChanges;
  /** Runs a round of the late-change follower now, unless one is pending (jobs/late-changes.ts). */
  kickLateChanges: () => void;
  /** After a write: hands users with a late change to the follower (late-changes/follow.ts `notice`). */
  noticeLateChanges: (productId: string, users: ReadonlyMap<string, KnownUser>) => Promise<void>;
  gates: GateEventStore;
  crossings: CrossingStore;
  /** Prepaid credits: accounts, grant records, the ledger, the expiry buckets (credits/). */
  credits: CreditStore;
  jobs: JobStore;
  outbox: OutboxStore;
  users: UserDirectory;
  logger: Logger;
  limits: IngestionLimits;
  /** Runs a relay round now, unless one is pending (jobs/relay.ts). */
  kickRelay: () => void;
  /** Runs the retention pass (Agenda, stored in this service's database). */
  scheduler: JobScheduler;
  retention: RetentionPolicy;
  /** Age after which an unfinished job is taken over (by a retry or the sweep). */
  recoveryAfterMs: number;
  /**
   * How long after arriving an event may still be moved to the period of a subscription
   * recorded late whose dates contain it (late-changes/); 0: never.
   */
  lateChangeWindowMs: number;
  now(): Date;
  /** Jobs this process is completing right now (so the sweep and a retry share the work). */
  recovering: Map<string, Promise<void>>;
  /**
   * Budget leases: the period caps' slices in the period counter, the windows' in the window
   * document; a team's beside its counts likewise (leases/team.ts).
   */
  leases: LeaseSettings & TeamLeaseStores & { store: LeaseStore; windows: WindowLeaseStore };
}

export interface LeaseSettings {
  /** Lifetime of a lease when the caller asks for none (ms). */
  ttlMs: number;
  /** How long after its expiry a lease still holds its unsettled part back (ms): the holder's flush time. */
  graceMs: number;
}
