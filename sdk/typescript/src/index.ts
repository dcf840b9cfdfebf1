export { Meter } from "./meter.ts";
export { Reservation } from "./reservation.ts";
export { LimitExceededError, MeterApiError, MeterNetworkError } from "./errors.ts";
export { currentUser } from "./context.ts";
export { normalizeModel, price, type Pricing, type Priced } from "./pricing.ts";
export { evaluate, type GateInput } from "./gates.ts";
export { VERSION } from "./transport.ts";
export {
  verifyWebhook,
  WebhookVerificationError,
  DEFAULT_TOLERANCE_SECONDS,
  type WebhookVerificationReason,
  type VerifyWebhookOptions,
  type WebhookHeaders,
  type WebhookEvent,
  type GateWebhookEvent,
  type ThresholdWebhookEvent,
  type SummaryWebhookEvent,
  type TestWebhookEvent,
  type GateWebhookData,
  type ThresholdWebhookData,
  type SummaryWebhookData,
  type TestWebhookData,
} from "./webhooks.ts";
export type * from "./types.ts";
