// `MeterCallbackHandler`: LangChain chat models metered through callbacks. The start callback
// is awaited before the provider is called, and with `raiseError` a `LimitExceededError`
// thrown there blocks the call and surfaces from `.invoke()` / `.stream()`.
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { MeterTypeError } from "../errors.ts";
import { MAX_TIMER_MS } from "../validate.ts";
import type { Meter } from "../meter.ts";
import {
  MeteredCall,
  checkArguments,
  outputLimit,
  promptOf,
  resolveUser,
  type IntegrationOptions,
  type StreamProgress,
} from "./metering.ts";
import { llmResultUsage } from "./langchain-usage.ts";

export { MissingUserError, type IntegrationOptions } from "./metering.ts";

/** Options of the handler: those of every integration, and when a silent stream counts as left. */
export interface MeterCallbackHandlerOptions extends IntegrationOptions {
  /**
   * A streaming run that has produced tokens and then none for this long is taken as left by
   * its reader (see docs/integrations.md): metered with what it streamed, its reservation given back.
   * Default 60,000 ms.
   */
  idleMs?: number;
}

interface Run {
  call: MeteredCall;
  progress: StreamProgress;
  /** Tokens seen, and as many at the last sweep; equal over two sweeps means idle. */
  tokens: number;
  swept: number;
  quiet: number;
}

const DEFAULT_IDLE_MS = 60_000;

/** What LangChain passes a start hook after the run id: parent run id, extra params (the invocation's), tags, metadata. */
type StartRest = [parentRunId?: string, extraParams?: Record<string, unknown>, tags?: string[], metadata?: Record<string, unknown>];

export class MeterCallbackHandler extends BaseCallbackHandler {
  name = "MeterCallbackHandler";
  readonly #runs = new Map<string, Run>();
  readonly #idleMs: number;
  #sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly meter: Meter,
    private readonly options: MeterCallbackHandlerOptions = {},
  ) {
    // raiseError: a hard gate must stop the call, and it makes LangChain await the handler.
    super({ raiseError: true });
    checkArguments("MeterCallbackHandler", meter, options);
    const idle = options.idleMs ?? DEFAULT_IDLE_MS;
    // Timers overflow past MAX_TIMER_MS and would then fire at once.
    if (!Number.isInteger(idle) || idle < 2 || idle > MAX_TIMER_MS) {
      throw new MeterTypeError("MeterCallbackHandler: idleMs must be an integer from 2 to 2147483647 (milliseconds)");
    }
    this.#idleMs = idle;
  }

  /** LangChain copies handlers for child runs; the runs in flight must stay in one place. */
  override copy(): this {
    return this;
  }

  /**
   * Reserves the call before LangChain sends it. Not an async function: for a warm user the
   * reservation is taken in this tick and nothing is returned to wait for (LangChain awaits
   * whatever is returned); otherwise a promise of the reservation.
   */
  override handleChatModelStart(_llm: unknown, messages: any[][], runId: string, ...[, extraParams, , metadata]: StartRest): Promise<void> | void {
    return this.#start(runId, messages.flat().map((m) => m?.content), extraParams, metadata);
  }

  /** A completion (non-chat) model's run: its prompts as text, reserved as a chat model's messages are. */
  override handleLLMStart(_llm: unknown, prompts: string[], runId: string, ...[, extraParams, , metadata]: StartRest): Promise<void> | void {
    return this.#start(runId, prompts, extraParams, metadata);
  }

  #start(runId: string, contents: unknown[], extraParams?: Record<string, unknown>, metadata?: Record<string, unknown>): Promise<void> | void {
    const invocation = extraParams?.invocation_params as Record<string, unknown> | undefined;
    const model = (invocation?.model ?? invocation?.modelName ?? metadata?.ls_model_name) as string | undefined;
    const started = MeteredCall.start(this.meter, this.options, {
      user_id: resolveUser(this.meter, this.options, "MeterCallbackHandler"),
      provider: String(metadata?.ls_provider ?? "unknown").toLowerCase(),
      model,
      prompt: promptOf(contents, invocation?.tools),
      // As the chat model sends it: OpenAI's and Anthropic's names, and the camel-case ones of other providers.
      max_output_tokens: outputLimit(invocation?.max_completion_tokens, invocation?.max_tokens, invocation?.maxTokens, invocation?.max_output_tokens, invocation?.maxOutputTokens),
    });
    if (started instanceof MeteredCall) return this.#started(runId, started);
    return started.then((call) => this.#started(runId, call));
  }

  #started(runId: string, call: MeteredCall): void {
    this.#runs.set(runId, { call, progress: call.streaming(), tokens: 0, swept: 0, quiet: 0 });
    // Started once and left running while runs come and go: a timer per call would cost more
    // than the sweep; it stops itself once a sweep finds no run.
    if (this.#sweeper === undefined) {
      this.#sweeper = setInterval(() => this.#sweep(), Math.floor(this.#idleMs / 2));
      // Never what keeps a process alive.
      (this.#sweeper as { unref?: () => void }).unref?.();
    }
  }

  override handleLLMNewToken(token: string, _idx: unknown, runId: string): void {
    const run = this.#runs.get(runId);
    if (!run) return;
    run.tokens++;
    run.progress.chars += token.length;
  }

  override handleLLMEnd(output: any, runId: string): void {
    const run = this.#end(runId);
    if (!run) return;
    const usage = llmResultUsage(output);
    if (usage) run.call.commit(usage);
    else run.call.settle();
  }

  /**
   * A provider error before any output (the request was refused) gives the reservation back.
   * An abort, or an error once text flowed, is metered with what was streamed and the input
   * estimate: the provider may have worked on it.
   */
  override handleLLMError(err: unknown, runId: string): void {
    const run = this.#end(runId);
    if (!run) return;
    if (run.progress.chars > 0 || isAbort(err)) run.call.settle();
    else run.call.release();
  }

  #end(runId: string): Run | undefined {
    const run = this.#runs.get(runId);
    if (!run) return undefined;
    this.#runs.delete(runId);
    return run;
  }

  /**
   * LangChain's `.stream()` reports nothing when its reader breaks out of the loop: the run
   * just stops producing tokens. A streaming run quiet for two sweeps (at least idleMs) is
   * settled as left; should LangChain end it after all, the end finds no run and counts
   * nothing twice. Runs that have produced no token are left alone: a slow or retried request
   * is not a left stream (the meter's shutdown settles those still open).
   */
  #sweep(): void {
    if (this.#runs.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
      return;
    }
    for (const [runId, run] of this.#runs) {
      if (run.tokens === 0) continue;
      if (run.tokens !== run.swept) {
        run.swept = run.tokens;
        run.quiet = 0;
      } else if (++run.quiet >= 2) {
        this.#end(runId)?.call.settle();
      }
    }
  }
}

/** An abort by the caller, as LangChain and the provider clients name it. */
function isAbort(err: unknown): boolean {
  const e = err as { name?: unknown; message?: unknown } | undefined;
  return e?.name === "AbortError" || e?.name === "APIUserAbortError" || e?.message === "AbortError" || e?.message === "Aborted";
}
