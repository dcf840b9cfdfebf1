// The package's main entry point: exactly what README.md's "What the package exports" lists
// (test/exports.test.ts holds the two together).
export { Meter } from "./meter.ts";
export { Reservation } from "./reservation.ts";
export { MeterError, LimitExceededError, MeterUnavailableError, MeterApiError, MeterAuthenticationError, MeterNetworkError, MeterEventsDroppedError } from "./errors.ts";
export { currentUser } from "./context.ts";
export { VERSION } from "./transport.ts";
export {
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationReason,
  type VerifyWebhookOptions,
  type WebhookHeaders,
  type WebhookEvent,
  type GateWebhookEvent,
  type ThresholdWebhookEvent,
  type SummaryWebhookEvent,
  type CreditsWebhookEvent,
  type TestWebhookEvent,
  type GateWebhookData,
  type ThresholdWebhookData,
  type SummaryWebhookData,
  type CreditsWebhookData,
  type TestWebhookData,
} from "./webhooks.ts";
export type {
  MeterOptions,
  MeterLogger,
  MeterStats,
  StartResult,
  GateStatus,
  GuardResult,
  GateContext,
  GuardInput,
  CallInput,
  UsageInput,
  RecordInput,
  ManualInput,
  ManualEvent,
  PortalToken,
  PortalTokenOptions,
  UsageEvent,
  UserState,
  TeamState,
  BillingPeriod,
  SessionStartState,
  PlanLimit,
  LimitMetric,
  LimitWindow,
  LimitStatus,
  LimitBucket,
  CreditsEvent,
  LimitCredits,
} from "./types.ts";
