// What the Anthropic client's messages say was used, plain and streamed. Internal to the
// package (the subpath exports only meterAnthropic).
import type { StreamProgress, Usage } from "./metering.ts";

const TOOL_BLOCKS = new Set(["tool_use", "server_tool_use", "mcp_tool_use"]);

/** Blocks the model used a tool with; result blocks are not calls. */
export function blockTool(block: any): string | undefined {
  return TOOL_BLOCKS.has(block?.type) && typeof block.name === "string" ? block.name : undefined;
}

/** Input as billed: `input_tokens` excludes cache reads and writes, so they are added. */
function inputOf(usage: any): number | undefined {
  if (usage?.input_tokens == null) return undefined;
  return usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
}

/**
 * Tool calls are the tool-use blocks of the content, one per block. The usage counters of
 * server tools (`server_tool_use.web_search_requests`) describe the same calls and are not
 * added on top.
 */
export function messageUsage(message: any): Usage {
  const tool_calls: string[] = [];
  for (const block of message?.content ?? []) {
    const name = blockTool(block);
    if (name) tool_calls.push(name);
  }
  return { input_tokens: inputOf(message?.usage) ?? 0, output_tokens: message?.usage?.output_tokens ?? 0, tool_calls };
}

/**
 * One raw stream event: usage starts on `message_start`; each `message_delta` carries
 * cumulative counts whose non-null fields override; `message_stop` ends the message.
 */
export function observeMessageEvent(event: any, progress: StreamProgress, usage: Record<string, number>): void {
  switch (event?.type) {
    case "message_start":
    case "message_delta": {
      const fields = event.type === "message_start" ? event.message?.usage : event.usage;
      for (const [k, v] of Object.entries(fields ?? {})) if (typeof v === "number") usage[k] = v;
      progress.input_tokens = inputOf(usage);
      progress.output_tokens = usage.output_tokens;
      break;
    }
    case "content_block_start": {
      const name = blockTool(event.content_block);
      if (name) progress.tool_calls.push(name);
      break;
    }
    case "content_block_delta": {
      const d = event.delta;
      progress.chars += (d?.text ?? d?.partial_json ?? d?.thinking ?? "").length;
      break;
    }
    case "message_stop":
      progress.complete = true;
      break;
  }
}
