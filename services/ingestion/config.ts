import { Type, peerUrlFields, serviceConfigFields } from "@meter/lib/config";

/** The ingestion settings every process hosting the service reads (service process, all-in-one). */
export const ingestionSettingsFields = {
  /** Pause between rounds of the outbox relay and the recovery sweep. */
  RELAY_INTERVAL_MS: Type.Integer({ default: 1_000, minimum: 10 }),
  RELAY_MAX_BACKOFF_MS: Type.Integer({ default: 60_000, minimum: 10 }),
  /** Age after which uncounted events of an interrupted request are completed by the sweep. */
  RECOVERY_AFTER_MS: Type.Integer({ default: 60_000, minimum: 0 }),
  /** Budget leases: default lifetime, and how long after expiry the unsettled part stays held. */
  LEASE_TTL_MS: Type.Integer({ default: 60_000, minimum: 100, maximum: 3_600_000 }),
  LEASE_GRACE_MS: Type.Integer({ default: 30_000, minimum: 0, maximum: 3_600_000 }),
};

export const ingestionConfigSchema = Type.Object({
  ...serviceConfigFields,
  ...peerUrlFields,
  PORT: Type.Integer({ default: 9093, minimum: 0, maximum: 65535 }),
  MONGODB_DB: Type.String({ default: "meter_ingestion", minLength: 1 }),
  ...ingestionSettingsFields,
});

export function ingestionSettings(config: {
  RELAY_INTERVAL_MS: number;
  RELAY_MAX_BACKOFF_MS: number;
  RECOVERY_AFTER_MS: number;
  LEASE_TTL_MS: number;
  LEASE_GRACE_MS: number;
}) {
  return {
    leaseTtlMs: config.LEASE_TTL_MS,
    leaseGraceMs: config.LEASE_GRACE_MS,
    relayIntervalMs: config.RELAY_INTERVAL_MS,
    relayMaxBackoffMs: config.RELAY_MAX_BACKOFF_MS,
    recoveryAfterMs: config.RECOVERY_AFTER_MS,
  };
}
