import { Type, idlePollFields, serviceConfigSchema } from "@meter/lib/config";

/** The analytics settings every process hosting the service reads (service process, all-in-one). */
export const analyticsSettingsFields = {
  /** Pause of the roller between passes when idle. */
  ROLL_INTERVAL_MS: Type.Integer({ default: 500, minimum: 50 }),
  /** The roller's pause grows from ROLL_INTERVAL_MS up to this while it finds no dirty day. */
  ...idlePollFields,
  /** Days of raw facts kept in the ledger; older days are final (README, "Retention"). */
  ANALYTICS_LEDGER_DAYS: Type.Integer({ default: 35, minimum: 2, maximum: 366 }),
  /** Days of rollups kept; 731 covers the previous period of a 365-day window. */
  ANALYTICS_ROLLUP_DAYS: Type.Integer({ default: 731, minimum: 731, maximum: 36_600 }),
  /** Memory (MB) for the per-user columns of days already read by summary and top-users queries; 0 keeps none. */
  ANALYTICS_USER_CACHE_MB: Type.Integer({ default: 128, minimum: 0, maximum: 65_536 }),
};

export const analyticsConfigSchema = serviceConfigSchema({ port: 9094, db: "meter_analytics" }, analyticsSettingsFields);

export function analyticsSettings(config: { ROLL_INTERVAL_MS: number; IDLE_POLL_MAX_MS: number; ANALYTICS_LEDGER_DAYS: number; ANALYTICS_ROLLUP_DAYS: number; ANALYTICS_USER_CACHE_MB: number }) {
  return {
    rollIntervalMs: config.ROLL_INTERVAL_MS,
    idlePollMaxMs: config.IDLE_POLL_MAX_MS,
    userCacheMb: config.ANALYTICS_USER_CACHE_MB,
    retention: { ledgerDays: config.ANALYTICS_LEDGER_DAYS, rollupDays: config.ANALYTICS_ROLLUP_DAYS },
  };
}
