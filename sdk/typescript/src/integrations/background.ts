// Responses the provider answers before it runs them (OpenAI's `background: true`): the answer
// says `queued` and carries no usage. Committing it would record a call that may cost dollars
// as zero tokens, so its call stays reserved until this client reads the response in a final
// state (a retrieve, plain or streamed, or a cancel) and is settled then with the usage read.
import type { MeteredCall, Usage } from "./metering.ts";

/**
 * A final response's usage: its own numbers; "nothing" when it reports none and ran to no use
 * (failed, cancelled: the reservation goes back, as for a failed request); "estimate" when it
 * reports none otherwise.
 */
export type Final = Usage | "nothing" | "estimate";

/** How one provider's background responses are recognised and read. */
export interface BackgroundRoute {
  /** The id of an answer that is a background response still to run, else undefined. */
  pending(data: any): string | undefined;
  /** The id of the response a request reads (a retrieve, a cancel), else undefined. */
  readOf(method: "get" | "post", path: string): string | undefined;
  /** How a response read settles its call; undefined while it still runs. */
  final(response: any): Final | undefined;
  /** The final response a stream event carries, else undefined. */
  finalOf(event: any): any;
}

/**
 * A response not read back within this time (ms) is settled with its estimate, as at shutdown:
 * its reservation is not held for good by a product that learns of the end another way (a
 * provider webhook). OpenAI keeps a background response for polling about ten minutes.
 */
export const MAX_UNREAD_MS = 60 * 60_000;
const SWEEP_MS = 60_000;

interface Held {
  call: MeteredCall;
  at: number;
}

/** The background calls of one wrapped client, by response id. */
export class BackgroundCalls {
  readonly #calls = new Map<string, Held>();
  #sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly route: BackgroundRoute) {}

  /** The calls held now (for tests and diagnostics). */
  get size(): number {
    return this.#calls.size;
  }

  /** Holds `call` when `data` is a background response still to run (then it is not committed now). */
  holdPending(data: any, call: MeteredCall): boolean {
    const id = this.route.pending(data);
    if (id === undefined) return false;
    this.hold(id, call);
    return true;
  }

  /** Holds `call` when a stream left before its end names a background response still running (`id`). */
  holdCut(id: string | undefined, call: MeteredCall): boolean {
    if (id === undefined || call.settled) return false;
    this.hold(id, call);
    return true;
  }

  /** Keeps `call` reserved until response `id` is read final. */
  hold(id: string, call: MeteredCall): void {
    const before = this.#calls.get(id);
    if (before && before.call !== call) before.call.settle();
    this.#calls.set(id, { call, at: Date.now() });
    this.#sweeper ??= setInterval(() => this.sweep(Date.now()), SWEEP_MS).unref();
  }

  /** Settles with their estimate the calls whose responses went unread too long. */
  sweep(now: number): void {
    for (const [id, held] of this.#calls) if (now - held.at >= MAX_UNREAD_MS || held.call.settled) this.#settle(id, held, "estimate");
    this.#stopWhenEmpty();
  }

  /**
   * The answer (`promise`, the SDK's APIPromise) of a request not metered itself; when it reads a
   * response held here, a final response settles the call held for it, and a stream settles it
   * at its final event.
   */
  read(method: "get" | "post", path: string, promise: any): any {
    if (this.#calls.size === 0) return promise;
    const id = this.route.readOf(method, path.split("?")[0]!);
    if (id === undefined || !this.#calls.has(id) || typeof promise?._thenUnwrap !== "function") return promise;
    return promise._thenUnwrap((data: any) => {
      const held = this.#calls.get(id);
      if (!held) return data;
      if (data && typeof data.iterator === "function") {
        const source = data.iterator.bind(data);
        data.iterator = () => this.#observe(source(), id, held);
        return data;
      }
      const final = this.route.final(data);
      if (final !== undefined) this.#settle(id, held, final);
      return data;
    });
  }

  /** Passes a streamed read's events through, settling the call at the first final one. */
  #observe(source: AsyncIterator<any>, id: string, held: Held): AsyncIterableIterator<any> {
    const iterator: AsyncIterableIterator<any> = {
      next: () =>
        source.next().then((r) => {
          const response = r.done ? undefined : this.route.finalOf(r.value);
          const final = response === undefined ? undefined : this.route.final(response);
          if (final !== undefined) this.#settle(id, held, final);
          return r;
        }),
      return: async (value?: unknown) => (await source.return?.(value)) ?? { done: true, value: undefined },
      throw: async (err?: unknown) => {
        if (source.throw) return source.throw(err);
        throw err;
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** Commits the usage read, gives the reservation back when the response used nothing, else settles with the estimate. */
  #settle(id: string, held: Held, final: Final): void {
    if (this.#calls.get(id) === held) this.#calls.delete(id);
    if (final === "nothing") held.call.release();
    else if (final === "estimate") held.call.settle();
    else held.call.commit(final);
    this.#stopWhenEmpty();
  }

  #stopWhenEmpty(): void {
    if (this.#calls.size > 0 || !this.#sweeper) return;
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }
}
