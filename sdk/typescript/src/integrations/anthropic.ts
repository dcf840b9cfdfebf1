// `meterAnthropic(client, meter, options)`: messages of `@anthropic-ai/sdk`, plain, raw
// streams and the `messages.stream()` helper (built on the same post, so counted once).
import type { Meter } from "../meter.ts";
import { meterPosts, type Route } from "./api-client.ts";
import { outputLimit, promptOf, type IntegrationOptions } from "./metering.ts";
import { messageUsage, observeMessageEvent } from "./anthropic-usage.ts";

export { MissingUserError, type IntegrationOptions } from "./metering.ts";

/** Meters `messages.create()` and everything built on it (beta messages too); the same client back. */
export function meterAnthropic<C extends object>(client: C, meter: Meter, options: IntegrationOptions = {}): C {
  return meterPosts(client, meter, options, {
    name: "meterAnthropic",
    provider: "anthropic",
    routes: { "/v1/messages": messages },
  });
}

const messages: Route = {
  prepare(body) {
    return { model: body.model, prompt: promptOf(body.system, body.messages, body.tools), maxOutputTokens: outputLimit(body.max_tokens), body };
  },
  usage: messageUsage,
  observer(progress) {
    const usage: Record<string, number> = {};
    return (event) => {
      observeMessageEvent(event, progress, usage);
      return event;
    };
  },
};
