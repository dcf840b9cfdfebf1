// What LangChain's LLM results say was used. Internal to the package (the subpath exports
// only MeterCallbackHandler and its options).
import type { Usage } from "./metering.ts";

/** Tools the model called in one message: `tool_calls`, plus server-tool blocks of the content. */
function messageTools(message: any): string[] {
  const names: string[] = [];
  for (const call of message?.tool_calls ?? []) if (call?.name) names.push(call.name);
  if (Array.isArray(message?.content)) {
    for (const block of message.content) if (block?.type === "server_tool_use" && block.name) names.push(block.name);
  }
  return names;
}

/**
 * Usage of an LLM result by shape (a second copy of @langchain/core fails `instanceof`):
 * each generation's `message.usage_metadata`; without it, `llmOutput.tokenUsage`.
 * Undefined when the result reports no usage at all.
 */
export function llmResultUsage(output: any): Usage | undefined {
  let input = 0;
  let out = 0;
  let found = false;
  const tool_calls: string[] = [];
  for (const generation of (output?.generations ?? []).flat()) {
    const message = generation?.message;
    const meta = message?.usage_metadata;
    if (meta) {
      found = true;
      input += meta.input_tokens ?? 0;
      out += meta.output_tokens ?? 0;
    }
    tool_calls.push(...messageTools(message));
  }
  const tokenUsage = output?.llmOutput?.tokenUsage;
  if (!found && tokenUsage) {
    found = true;
    input = tokenUsage.promptTokens ?? 0;
    out = tokenUsage.completionTokens ?? 0;
  }
  return found ? { input_tokens: input, output_tokens: out, tool_calls } : undefined;
}
