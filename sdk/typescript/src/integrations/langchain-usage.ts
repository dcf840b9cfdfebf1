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
 * each prompt's generations' `message.usage_metadata` (identical copies on a prompt's candidates
 * counted once); without it, `llmOutput.tokenUsage`.
 * Undefined when the result reports no usage at all.
 */
export function llmResultUsage(output: any): Usage | undefined {
  let input = 0;
  let out = 0;
  let found = false;
  const tool_calls: string[] = [];
  for (const candidates of output?.generations ?? []) {
    // The candidates of one prompt (n > 1) may each carry the whole answer's usage (@langchain/openai
    // copies it onto every choice's message): identical copies are one answer's, counted once.
    const seen: [number, number][] = [];
    for (const generation of Array.isArray(candidates) ? candidates : [candidates]) {
      const message = generation?.message;
      const meta = message?.usage_metadata;
      if (meta) {
        found = true;
        seen.push([meta.input_tokens ?? 0, meta.output_tokens ?? 0]);
      }
      tool_calls.push(...messageTools(message));
    }
    const copies = seen.length > 1 && seen.every(([i, o]) => i === seen[0]![0] && o === seen[0]![1]);
    for (const [i, o] of copies ? seen.slice(0, 1) : seen) {
      input += i;
      out += o;
    }
  }
  const tokenUsage = output?.llmOutput?.tokenUsage;
  if (!found && tokenUsage) {
    found = true;
    input = tokenUsage.promptTokens ?? 0;
    out = tokenUsage.completionTokens ?? 0;
  }
  return found ? { input_tokens: input, output_tokens: out, tool_calls } : undefined;
}
