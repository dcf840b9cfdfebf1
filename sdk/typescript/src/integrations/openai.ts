// `meterOpenAI(client, meter, options)`: chat completions and the Responses API of the
// `openai` package, plain and streamed, metered with the provider's own usage numbers.
import type { Meter } from "../meter.ts";
import { meterPosts, type Prepared, type Route } from "./api-client.ts";
import { outputLimit, promptOf, type IntegrationOptions } from "./metering.ts";
import { chatCompletionUsage, observeChatChunk, observeResponseEvent, responseUsage } from "./openai-usage.ts";

export { MissingUserError, type IntegrationOptions } from "./metering.ts";

/**
 * Meters every chat completion and response the client creates, its helpers included
 * (`.parse()`, `.stream()`, `runTools()`), and returns the same client.
 */
export function meterOpenAI<C extends object>(client: C, meter: Meter, options: IntegrationOptions = {}): C {
  return meterPosts(client, meter, options, {
    name: "meterOpenAI",
    provider: "openai",
    routes: { "/chat/completions": chatCompletions, "/responses": responses },
  });
}

const chatCompletions: Route = {
  prepare(body): Prepared {
    // Without include_usage a stream carries no usage at all: ask for it, and hide the answer.
    const addedUsage = body.stream === true && body.stream_options?.include_usage !== true;
    return {
      model: body.model,
      prompt: promptOf(body.messages, body.tools),
      // max_tokens is the older name of max_completion_tokens (deprecated, still accepted).
      maxOutputTokens: outputLimit(body.max_completion_tokens, body.max_tokens),
      body: addedUsage ? { ...body, stream_options: { ...body.stream_options, include_usage: true } } : body,
      addedUsage,
    };
  },
  usage: chatCompletionUsage,
  observer(progress, prepared) {
    const seen = new Set<string>();
    return (chunk) => {
      observeChatChunk(chunk, progress, seen);
      if (!prepared.addedUsage || chunk === null || typeof chunk !== "object" || !("usage" in chunk)) return chunk;
      if (chunk.usage && Array.isArray(chunk.choices) && chunk.choices.length === 0) return undefined;
      // A copy without the field rather than `delete`, which leaves the parsed chunk in a
      // slower shape; a for-in copy measured cheaper than an object rest (`{ usage, ...rest }`).
      const rest: Record<string, unknown> = {};
      for (const key in chunk) if (key !== "usage") rest[key] = chunk[key];
      return rest;
    };
  },
};

const responses: Route = {
  prepare(body) {
    return { model: body.model, prompt: promptOf(body.instructions, body.input, body.tools), maxOutputTokens: outputLimit(body.max_output_tokens), body };
  },
  usage: responseUsage,
  observer: (progress) => (event) => {
    observeResponseEvent(event, progress);
    return event;
  },
};
