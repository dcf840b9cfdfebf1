import type { Logger } from "@meter/lib/logger";
import type { AnalyticsPort } from "./adapters/analytics.ts";
import type { JobScheduler } from "@meter/lib/jobs";
import type { SecretBox } from "./domain/secrets.ts";
import type { WebhookSender } from "./adapters/sender.ts";
import type { ClaimStore } from "./store/claims.ts";
import type { DeliveryStore } from "./store/deliveries.ts";
import type { EndpointStore } from "./store/endpoints.ts";
import type { EventStore } from "./store/events.ts";
import type { QueueEntry, QueueStore } from "./store/queue.ts";
import type { UrlPolicy } from "./adapters/url-guard.ts";

export interface WebhooksDeps {
  endpoints: EndpointStore;
  events: EventStore;
  deliveries: DeliveryStore;
  claims: ClaimStore;
  /** Fan-outs and attempts waiting for the dispatcher. */
  queue: QueueStore;
  /** Hands entries just queued to this replica's dispatcher, which starts a round at once. */
  dispatch: (entries: QueueEntry[]) => void;
  scheduler: JobScheduler;
  sender: WebhookSender;
  secrets: SecretBox;
  analytics: AnalyticsPort;
  urlPolicy: UrlPolicy;
  logger: Logger;
  /** Multiplies every retry delay; 1 in production, small in tests. */
  timeScale: number;
  /** Width of the window in which identical gate events are coalesced. */
  gateWindowMs: number;
  attemptTimeoutMs: number;
  /** Days the delivery log (and the events it needs) is kept. */
  logDays: number;
  now: () => Date;
}
