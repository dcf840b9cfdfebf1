// `meterModel(model, meter, options)`: a Vercel AI SDK language model wrapped with middleware,
// so `generateText` / `streamText` (and agents built on them) are metered per model call.
import { wrapLanguageModel } from "ai";
import type { Meter } from "../meter.ts";
import {
  MeteredCall,
  checkArguments,
  outputLimit,
  promptOf,
  resolveUser,
  settleWhenCollected,
  type IntegrationOptions,
} from "./metering.ts";
import { generateUsage, observeStreamPart } from "./ai-usage.ts";

export { MissingUserError, type IntegrationOptions } from "./metering.ts";

type WrapOptions = Parameters<typeof wrapLanguageModel>[0];
type Middleware = Exclude<WrapOptions["middleware"], unknown[]>;

/**
 * The same model, metered. The guard runs before the provider is called: `generateText`
 * rejects with `LimitExceededError`; `streamText` reports it as a stream error (call
 * `meter.guard()` first where a 429 must be answered before streaming).
 */
export function meterModel<M extends WrapOptions["model"]>(model: M, meter: Meter, options: IntegrationOptions = {}) {
  checkArguments("meterModel", meter, options);
  /**
   * Reserves (in this tick when the user is warm), runs the provider call, and hands its result
   * to `done`. A failed call gives the reservation back (or, when the caller aborted, meters the
   * estimate). The hooks' one async layer: the provider is awaited here, nothing between.
   */
  async function metered<R, T>(params: any, m: any, provider: () => PromiseLike<R>, done: (call: MeteredCall, result: R) => T): Promise<T> {
    const started = MeteredCall.start(meter, options, {
      user_id: resolveUser(meter, options, "meterModel"),
      provider: String(m.provider ?? "unknown").split(".")[0]!,
      model: m.modelId,
      prompt: promptOf(params.prompt, params.tools),
      max_output_tokens: outputLimit(params.maxOutputTokens),
    });
    const call = started instanceof MeteredCall ? started : await started;
    let result: R;
    try {
      result = await provider();
    } catch (err) {
      call.fail(params.abortSignal?.aborted === true);
      throw err;
    }
    return done(call, result);
  }

  const middleware: Middleware = {
    wrapGenerate: ({ doGenerate, params, model: m }) =>
      metered(params, m, doGenerate, (call, result) => {
        call.commit(generateUsage(result));
        return result;
      }),
    wrapStream: ({ doStream, params, model: m }) => metered(params, m, doStream, (call, result) => ({ ...result, stream: meteredStream(call, result.stream) })),
  };
  return wrapLanguageModel({ model, middleware });
}

/**
 * The provider's stream, passed through to the caller while its parts are observed, settling
 * `call` when it ends, fails, is cancelled or is collected unread. A pull-through stream rather
 * than a TransformStream: a consumer that cancels (abortSignal, leaving the loop) is seen here
 * and metered with what it used. Nothing is read ahead of the consumer (highWaterMark 0), and a
 * part costs one read, no more.
 */
function meteredStream<P>(call: MeteredCall, source: ReadableStream<P>): ReadableStream<P> {
  const progress = call.streaming();
  const reader = source.getReader();
  let out!: ReadableStreamDefaultController<P>;
  const forward = (r: { done: boolean; value?: P }) => {
    if (r.done) {
      call.settle(progress);
      out.close();
      return;
    }
    observeStreamPart(r.value, progress);
    out.enqueue(r.value as P);
  };
  const broken = (err: unknown) => {
    call.settle(progress);
    out.error(err);
  };
  const stream = new ReadableStream<P>(
    {
      start: (controller) => void (out = controller),
      pull: () => reader.read().then(forward, broken),
      cancel(reason) {
        call.settle(progress);
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  settleWhenCollected(stream, call);
  return stream;
}
