import { Type, serviceConfigSchema } from "@meter/lib/config";

/** The plans settings every process hosting the service reads (service process, all-in-one). */
export const plansSettingsFields = {
  /** How long ResolveUsers may answer a plan from memory: a change through another replica shows within it. */
  PLAN_CACHE_MS: Type.Integer({ default: 1_000, minimum: 0, maximum: 60_000 }),
  /**
   * Megabytes of users each process keeps in memory for ResolveUsers and GetUser (0: none). A
   * change through this process shows at once; through another replica within about a second.
   */
  USER_CACHE_MB: Type.Integer({ default: 64, minimum: 0, maximum: 16_384 }),
};

export function plansSettings(config: { PLAN_CACHE_MS: number; USER_CACHE_MB: number }) {
  return { planCacheMs: config.PLAN_CACHE_MS, userCacheBytes: config.USER_CACHE_MB * 1024 * 1024 };
}

export const plansConfigSchema = serviceConfigSchema({ port: 9092, db: "meter_plans" }, plansSettingsFields);
