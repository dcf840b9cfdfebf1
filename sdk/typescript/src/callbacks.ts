/** The callbacks a product registers on the Meter, and how they are run: one that throws or rejects stops neither the others nor the call. */
import type { CreditsNews } from "./credits.ts";
import type { Reporter } from "./reporting.ts";
import type { CreditsEvent, GateContext, GuardResult, SessionStartState, UsageEvent } from "./types.ts";

export type GateCallback = (result: GuardResult, ctx: GateContext) => unknown;

export class Callbacks {
  readonly softGate: GateCallback[] = [];
  readonly hardGate: GateCallback[] = [];
  readonly usage: ((event: UsageEvent) => unknown)[] = [];
  readonly sessionStart: ((state: SessionStartState) => unknown)[] = [];
  readonly closing: (() => unknown)[] = [];
  readonly creditsLow: ((event: CreditsEvent) => unknown)[] = [];
  readonly creditsDepleted: ((event: CreditsEvent) => unknown)[] = [];
  readonly creditsExpired: ((event: CreditsEvent) => unknown)[] = [];

  constructor(private readonly report: Reporter) {}

  fire<A>(cbs: ((arg: A) => unknown)[], arg: A): void {
    for (const cb of cbs) this.safely(() => cb(arg));
  }

  /** The gate callbacks of a soft or hard gate. */
  gate(hard: boolean, result: GuardResult, ctx: GateContext): void {
    for (const cb of hard ? this.hardGate : this.softGate) this.safely(() => cb(result, ctx));
  }

  /** The credits callbacks of what a user's credits went through (UserEntry.creditNews). */
  credits(news: readonly CreditsNews[]): void {
    for (const n of news) this.fire(n.kind === "low" ? this.creditsLow : n.kind === "depleted" ? this.creditsDepleted : this.creditsExpired, n.event);
  }

  private safely(fn: () => unknown): void {
    try {
      const r = fn();
      if (r && typeof (r as Promise<unknown>).then === "function") {
        (r as Promise<unknown>).then(undefined, (err: Error) => this.report.warn("a callback rejected", err));
      }
    } catch (err) {
      this.report.warn("a callback threw", err as Error);
    }
  }
}
