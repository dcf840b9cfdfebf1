/**
 * What the integrations (src/integrations, src/http) need of the core beyond its API. No entry
 * point of the package exports this module: these calls may change without notice.
 */
export { reserveNow, reporterOf } from "./meter.ts";
export { commitNow } from "./reservation.ts";
export { setClock } from "./clock.ts";
