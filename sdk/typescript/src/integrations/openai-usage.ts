// What the OpenAI client's answers say was used: chat completions and the Responses API,
// plain and streamed. Internal to the package (the subpath exports only meterOpenAI).
import type { StreamProgress, Usage } from "./metering.ts";

// --- chat completions -------------------------------------------------------------------

/** Tool names of one chat message: function and custom tool calls. */
function chatToolName(call: any): string | undefined {
  return call?.function?.name ?? call?.custom?.name;
}

/** An answer's usage: its token counts (0 when absent) and the tools named by its items that are calls. */
function usageOf(input: number | undefined, output: number | undefined, items: any[], toolOf: (item: any) => string | undefined): Usage {
  const tool_calls: string[] = [];
  for (const item of items) {
    const name = toolOf(item);
    if (name) tool_calls.push(name);
  }
  return { input_tokens: input ?? 0, output_tokens: output ?? 0, tool_calls };
}

export function chatCompletionUsage(completion: any): Usage {
  const calls = (completion?.choices ?? []).flatMap((choice: any) => choice?.message?.tool_calls ?? []);
  return usageOf(completion?.usage?.prompt_tokens, completion?.usage?.completion_tokens, calls, chatToolName);
}

/**
 * One stream chunk. Tool calls arrive in pieces keyed by (choice, index), the name in the
 * first piece only, so each is counted at its first piece. The usage chunk (`choices: []`)
 * comes last and only with `stream_options.include_usage`.
 */
export function observeChatChunk(chunk: any, progress: StreamProgress, seen: Set<string>): void {
  if (chunk?.usage) {
    progress.input_tokens = chunk.usage.prompt_tokens ?? 0;
    progress.output_tokens = chunk.usage.completion_tokens ?? 0;
    progress.complete = true;
  }
  for (const choice of chunk?.choices ?? []) {
    const delta = choice?.delta;
    if (typeof delta?.content === "string") progress.chars += delta.content.length;
    for (const call of delta?.tool_calls ?? []) {
      const key = `${choice.index}:${call.index}`;
      const name = chatToolName(call);
      if (name && !seen.has(key)) {
        seen.add(key);
        progress.tool_calls.push(name);
      }
      progress.chars += call?.function?.arguments?.length ?? 0;
    }
  }
}

// --- Responses API ----------------------------------------------------------------------

/**
 * The tool an output item stands for: a function, custom or MCP call by its name, a built-in
 * tool by its type without `_call` (`web_search_call` → `web_search`). Messages, reasoning and
 * `*_output` items are not calls.
 */
export function responseItemTool(item: any): string | undefined {
  const type = item?.type;
  if (typeof type !== "string") return undefined;
  if (type === "function_call" || type === "custom_tool_call" || type === "mcp_call") return item.name;
  if (type.endsWith("_call")) return type.slice(0, -"_call".length);
  return undefined;
}

export function responseUsage(response: any): Usage {
  return usageOf(response?.usage?.input_tokens, response?.usage?.output_tokens, response?.output ?? [], responseItemTool);
}

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** The response a stream's final event carries, else undefined. */
export function finalResponseOf(event: any): any {
  return TERMINAL.has(event?.type) ? event.response : undefined;
}

/** One Responses stream event; the terminal event carries the whole response and its usage. */
export function observeResponseEvent(event: any, progress: StreamProgress): void {
  const type = event?.type;
  if (type === "response.created" && typeof event.response?.id === "string") progress.responseId = event.response.id;
  if (type === "response.output_text.delta" || type === "response.function_call_arguments.delta") {
    progress.chars += event.delta?.length ?? 0;
  } else if (type === "response.output_item.added") {
    const name = responseItemTool(event.item);
    if (name) progress.tool_calls.push(name);
  } else if (TERMINAL.has(type) && event.response) {
    // Ended: nothing runs on, whether or not the event says what it used.
    progress.responseId = undefined;
    const usage = responseUsage(event.response);
    progress.tool_calls = usage.tool_calls;
    if (event.response.usage) {
      progress.input_tokens = usage.input_tokens;
      progress.output_tokens = usage.output_tokens;
      progress.complete = true;
    }
  }
}
