// `MeterCallbackHandler`: LangChain chat models metered through callbacks. The start callback
// is awaited before the provider is called, and with `raiseError` a `LimitExceededError`
// thrown there blocks the call and surfaces from `.invoke()` / `.stream()`.
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { Meter } from "../meter.ts";
import {
  MeteredCall,
  checkArguments,
  estimateInput,
  newProgress,
  resolveUser,
  usageOfProgress,
  type IntegrationOptions,
  type StreamProgress,
  type Usage,
} from "./metering.ts";

export { MissingUserError, type IntegrationOptions } from "./metering.ts";

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

interface Run {
  call: MeteredCall;
  progress: StreamProgress;
}

export class MeterCallbackHandler extends BaseCallbackHandler {
  name = "MeterCallbackHandler";
  readonly #runs = new Map<string, Run>();

  constructor(
    private readonly meter: Meter,
    private readonly options: IntegrationOptions = {},
  ) {
    // raiseError: a hard gate must stop the call, and it makes LangChain await the handler.
    super({ raiseError: true });
    checkArguments("MeterCallbackHandler", meter, options);
  }

  /** LangChain copies handlers for child runs; the runs in flight must stay in one place. */
  override copy(): this {
    return this;
  }

  override async handleChatModelStart(
    _llm: unknown,
    messages: any[][],
    runId: string,
    _parentRunId?: string,
    extraParams?: Record<string, unknown>,
    _tags?: string[],
    metadata?: Record<string, unknown>,
  ): Promise<void> {
    const invocation = extraParams?.invocation_params as Record<string, unknown> | undefined;
    const model = (invocation?.model ?? invocation?.modelName ?? metadata?.ls_model_name) as string | undefined;
    const call = await MeteredCall.start(this.meter, this.options, {
      user_id: resolveUser(this.meter, this.options, "MeterCallbackHandler"),
      provider: String(metadata?.ls_provider ?? "unknown").toLowerCase(),
      model,
      input_tokens: estimateInput(messages.flat().map((m) => m?.content), invocation?.tools),
    });
    this.#runs.set(runId, { call, progress: newProgress() });
  }

  override handleLLMNewToken(token: string, _idx: unknown, runId: string): void {
    const run = this.#runs.get(runId);
    if (run) run.progress.chars += token.length;
  }

  override handleLLMEnd(output: any, runId: string): void {
    const run = this.#runs.get(runId);
    if (!run) return;
    this.#runs.delete(runId);
    run.call.commit(llmResultUsage(output) ?? usageOfProgress(run.progress, run.call.estimate));
  }

  /**
   * An error before any output (the provider refused) gives the reservation back; an aborted
   * stream that already produced text is metered with its estimate.
   */
  override handleLLMError(_err: unknown, runId: string): void {
    const run = this.#runs.get(runId);
    if (!run) return;
    this.#runs.delete(runId);
    if (run.progress.chars > 0) run.call.commit(usageOfProgress(run.progress, run.call.estimate));
    else run.call.release();
  }
}
