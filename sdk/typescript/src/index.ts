export { Meter } from "./meter.ts";
export { Reservation } from "./reservation.ts";
export { LimitExceededError, MeterApiError, MeterNetworkError } from "./errors.ts";
export { currentUser } from "./context.ts";
export { normalizeModel, price, type Pricing, type Priced } from "./pricing.ts";
export { evaluate, type GateInput } from "./gates.ts";
export { VERSION } from "./transport.ts";
export type * from "./types.ts";
