// `meterOpenAI(client, meter, options)`: chat completions and the Responses API of the
// `openai` package, plain and streamed, metered with the provider's own usage numbers.
import type { Meter } from "../meter.ts";
import { meterPosts, type Prepared, type Route } from "./api-client.ts";
import type { BackgroundRoute } from "./background.ts";
import { outputLimit, promptOf, type IntegrationOptions } from "./metering.ts";
import { chatCompletionUsage, finalResponseOf, observeChatChunk, observeResponseEvent, responseUsage } from "./openai-usage.ts";

export { MissingUserError, type IntegrationOptions } from "./metering.ts";

/**
 * Meters every chat completion and response the client creates, its helpers included
 * (`.parse()`, `.stream()`, `runTools()`), and returns the same client. A response created with
 * `background: true` is settled when this client reads it final (`responses.retrieve()`, plain
 * or streamed, or `responses.cancel()`), with the usage it then reports.
 */
export function meterOpenAI<C extends object>(client: C, meter: Meter, options: IntegrationOptions = {}): C {
  return meterPosts(client, meter, options, {
    name: "meterOpenAI",
    provider: "openai",
    routes: { "/chat/completions": chatCompletions, "/responses": responses },
    background,
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
  // A background response streamed and left before its end runs on: held until read final.
  cutRunning: (progress, prepared) => (prepared.body?.background === true ? progress.responseId : undefined),
};

/** A response's states that end it: its usage is all there will be. */
const FINAL = new Set(["completed", "incomplete", "failed", "cancelled"]);
const READ = /^\/responses\/([^/]+)$/;
const CANCEL = /^\/responses\/([^/]+)\/cancel$/;

const background: BackgroundRoute = {
  pending: (data) => (data?.background === true && typeof data.id === "string" && !FINAL.has(data.status) ? data.id : undefined),
  readOf: (method, path) => (method === "get" ? READ : CANCEL).exec(path)?.[1],
  final(response) {
    if (!FINAL.has(response?.status)) return undefined;
    if (response.usage) return responseUsage(response);
    return response.status === "failed" || response.status === "cancelled" ? "nothing" : "estimate";
  },
  finalOf: finalResponseOf,
};
