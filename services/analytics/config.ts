import { Type, peerUrlFields, serviceConfigFields } from "@meter/lib/config";

/** The analytics settings every process hosting the service reads (service process, all-in-one). */
export const analyticsSettingsFields = {
  /** Pause of the roller between passes when idle. */
  ROLL_INTERVAL_MS: Type.Integer({ default: 500, minimum: 50 }),
};

export const analyticsConfigSchema = Type.Object({
  ...serviceConfigFields,
  ...peerUrlFields,
  PORT: Type.Integer({ default: 9094, minimum: 0, maximum: 65535 }),
  MONGODB_DB: Type.String({ default: "meter_analytics", minLength: 1 }),
  ...analyticsSettingsFields,
});

export function analyticsSettings(config: { ROLL_INTERVAL_MS: number }) {
  return { rollIntervalMs: config.ROLL_INTERVAL_MS };
}
