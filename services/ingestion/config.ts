import { Type, idlePollFields, productConcurrencyFields, serviceConfigSchema } from "@meter/lib/config";

/** The ingestion settings every process hosting the service reads (service process, all-in-one). */
export const ingestionSettingsFields = {
  /** Interval of the repeating relay job (outboxes and the recovery sweep) and its first backoff. */
  RELAY_INTERVAL_MS: Type.Integer({ default: 1_000, minimum: 10 }),
  RELAY_MAX_BACKOFF_MS: Type.Integer({ default: 60_000, minimum: 10 }),
  /** The relay's pause grows from RELAY_INTERVAL_MS up to this while it finds nothing to hand over. */
  ...idlePollFields,
  /** Failed handovers of one outbox entry, its peer reachable, before it is set aside (README, "Set-aside outbox entries"). */
  RELAY_MAX_ATTEMPTS: Type.Integer({ default: 10, minimum: 1, maximum: 1_000 }),
  /** Age after which uncounted events of an interrupted request are completed by the sweep. */
  RECOVERY_AFTER_MS: Type.Integer({ default: 60_000, minimum: 0 }),
  /**
   * How long after arriving an event stamped inside the dates of a subscription recorded later
   * is still moved to that subscription's period (README, "Billing period of an event"); 0: never.
   */
  LATE_CHANGE_WINDOW_MS: Type.Integer({ default: 600_000, minimum: 0, maximum: 86_400_000 }),
  /** Days usage events are kept after arrival (README, "Retention"); also the duplicate-id window. */
  INGESTION_USAGE_EVENT_DAYS: Type.Integer({ default: 35, minimum: 2, maximum: 36_600 }),
  /** Days gate events are kept after arrival: how far back the gate-event listing reaches. */
  INGESTION_GATE_EVENT_DAYS: Type.Integer({ default: 90, minimum: 2, maximum: 36_600 }),
  /** Days threshold crossings are kept after their period ended; later, that period announces none. */
  INGESTION_CROSSING_DAYS: Type.Integer({ default: 35, minimum: 2, maximum: 36_600 }),
  ...productConcurrencyFields,
  /**
   * Events of usage and gate batches one process holds at once, running or waiting; a batch
   * beyond it is refused with a retry hint (429 with Retry-After); 0: no bound. The default is
   * a few seconds of what the embedded database stores (README, "Bounded work in flight").
   */
  INGESTION_MAX_EVENTS_IN_FLIGHT: Type.Integer({ default: 20_000, minimum: 0, maximum: 10_000_000 }),
  /** Budget leases: default lifetime, and how long after expiry the unsettled part stays held. */
  LEASE_TTL_MS: Type.Integer({ default: 60_000, minimum: 100, maximum: 3_600_000 }),
  LEASE_GRACE_MS: Type.Integer({ default: 30_000, minimum: 0, maximum: 3_600_000 }),
  /** The first lease requests for a budget not asked for within a minute wait until none arrived for this long, then share what is free equally (0: no wait). */
  LEASE_GATHER_MS: Type.Integer({ default: 25, minimum: 0, maximum: 1_000 }),
};

export const ingestionConfigSchema = serviceConfigSchema({ port: 9093, db: "meter_ingestion" }, ingestionSettingsFields);

export function ingestionSettings(config: {
  RELAY_INTERVAL_MS: number;
  RELAY_MAX_BACKOFF_MS: number;
  IDLE_POLL_MAX_MS: number;
  RELAY_MAX_ATTEMPTS: number;
  RECOVERY_AFTER_MS: number;
  LATE_CHANGE_WINDOW_MS: number;
  INGESTION_USAGE_EVENT_DAYS: number;
  INGESTION_GATE_EVENT_DAYS: number;
  INGESTION_CROSSING_DAYS: number;
  LEASE_TTL_MS: number;
  LEASE_GRACE_MS: number;
  LEASE_GATHER_MS: number;
  INGESTION_PRODUCT_CONCURRENCY: number;
  INGESTION_MAX_EVENTS_IN_FLIGHT: number;
}) {
  return {
    productWriteConcurrency: config.INGESTION_PRODUCT_CONCURRENCY,
    maxEventsInFlight: config.INGESTION_MAX_EVENTS_IN_FLIGHT,
    leaseTtlMs: config.LEASE_TTL_MS,
    leaseGraceMs: config.LEASE_GRACE_MS,
    leaseGatherMs: config.LEASE_GATHER_MS,
    relayIntervalMs: config.RELAY_INTERVAL_MS,
    relayMaxBackoffMs: config.RELAY_MAX_BACKOFF_MS,
    idlePollMaxMs: config.IDLE_POLL_MAX_MS,
    relayMaxAttempts: config.RELAY_MAX_ATTEMPTS,
    recoveryAfterMs: config.RECOVERY_AFTER_MS,
    lateChangeWindowMs: config.LATE_CHANGE_WINDOW_MS,
    retention: {
      usageEventDays: config.INGESTION_USAGE_EVENT_DAYS,
      gateEventDays: config.INGESTION_GATE_EVENT_DAYS,
      crossingDays: config.INGESTION_CROSSING_DAYS,
    },
  };
}
