import { characters } from "@meter/lib/characters";
import { rpcError } from "@meter/lib/errors";
import type { WebhooksDeps } from "../deps.ts";
import { validateSubscribedEvents, type EventType } from "../domain/events.ts";
import { recordEvents, type NewEvent } from "../flows/emit.ts";
import type { EndpointDoc } from "../store/endpoints.ts";
import { endpointUrlProblem } from "../adapters/url-guard.ts";

/** The product's endpoint, or NOT_FOUND (also for another product's endpoint). */
export async function endpointOf(deps: WebhooksDeps, productId: string, endpointId: string): Promise<EndpointDoc> {
  const doc = endpointId ? await deps.endpoints.get(productId, endpointId) : null;
  if (!doc) throw rpcError.notFound(`webhook endpoint ${endpointId} not found`);
  return doc;
}

export async function checkUrl(deps: WebhooksDeps, url: string): Promise<string> {
  const problem = await endpointUrlProblem(url, deps.urlPolicy);
  if (problem) throw rpcError.invalid(problem);
  return url;
}

export function checkEvents(types: readonly string[]): EventType[] {
  const r = validateSubscribedEvents(types);
  if ("error" in r) throw rpcError.invalid(r.error);
  return r.ok;
}

export const MAX_DESCRIPTION = 1000;

export function checkDescription(d: string | undefined): string | null {
  if (d === undefined) return null;
  if (characters(d) > MAX_DESCRIPTION) throw rpcError.invalid(`description must be at most ${MAX_DESCRIPTION} characters`);
  return d;
}

/**
 * A hand-over of notices that make one event each, of the notice's product. Every notice is
 * checked before any is recorded: a refused call records nothing, and its retry is whole.
 */
export async function publishNotices<N extends { productId: string }>(
  deps: WebhooksDeps,
  notices: N[],
  validate: (n: N) => void,
  event: (n: N) => Omit<NewEvent, "productId">,
): Promise<void> {
  notices.forEach(validate);
  await recordEvents(deps, notices.map((n) => ({ productId: n.productId, ...event(n) })));
}
