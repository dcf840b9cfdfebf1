// What the AI SDK's language-model results and stream parts say was used. Internal to the
// package (the subpath exports only meterModel).
import type { StreamProgress, Usage } from "./metering.ts";

/**
 * Usage of the model spec's usage object: nested (`inputTokens.total`) since spec v3,
 * flat numbers in v2; read by shape, not by version.
 */
export function modelUsage(usage: any): { input_tokens: number; output_tokens: number } {
  const { input_tokens, output_tokens } = reportedUsage(usage);
  return { input_tokens: input_tokens ?? 0, output_tokens: output_tokens ?? 0 };
}

/** The counts the provider reported, undefined where it reported none (a stream cut before its usage chunk). */
function reportedUsage(usage: any): { input_tokens?: number; output_tokens?: number } {
  const count = (v: any): number | undefined => (typeof v === "number" ? v : typeof v?.total === "number" ? v.total : undefined);
  return { input_tokens: count(usage?.inputTokens), output_tokens: count(usage?.outputTokens) };
}

/** Tool calls of a generate result: one per `tool-call` content part, provider-executed ones included. */
export function generateUsage(result: any): Usage {
  const tool_calls: string[] = [];
  for (const part of result?.content ?? []) if (part?.type === "tool-call" && part.toolName) tool_calls.push(part.toolName);
  return { ...modelUsage(result?.usage), tool_calls };
}

/** One stream part: text and tool input count toward an estimate; usage comes on `finish`. */
export function observeStreamPart(part: any, progress: StreamProgress): void {
  switch (part?.type) {
    case "text-delta":
    case "reasoning-delta":
    case "tool-input-delta":
      progress.chars += (part.delta ?? part.textDelta ?? "").length;
      break;
    case "tool-call":
      if (part.toolName) progress.tool_calls.push(part.toolName);
      break;
    case "finish": {
      // A provider's stream ends with `finish` even when no usage came (an error chunk, a connection closed
      // early): its totals are then undefined, and the call is metered as a cut stream (input estimate, text received).
      const usage = reportedUsage(part.usage);
      if (usage.input_tokens === undefined && usage.output_tokens === undefined) break;
      progress.input_tokens = usage.input_tokens ?? progress.input_tokens;
      progress.output_tokens = usage.output_tokens ?? 0;
      progress.complete = true;
      break;
    }
  }
}
