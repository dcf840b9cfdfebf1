/**
 * What calls used: priced under the user's plan, counted in the period and the session, spent
 * from the lease, queued for delivery and announced to onUsage. Usage recorded before the plan
 * is known is priced (and held back from delivery) until it is. Manual events are posted at
 * once (POST /events) and counted here once the service has them.
 */
import { randomUUID } from "node:crypto";
import type { Callbacks } from "./callbacks.ts";
import { now as clockNow } from "./clock.ts";
import type { Leases } from "./leases.ts";
import { rateOf, tokenCost, toolsCost } from "./pricing.ts";
import { addDollars, type Rate } from "./rules/index.ts";
import type { EventQueue } from "./queue.ts";
import type { Session } from "./user-sessions.ts";
import type { UserEntry } from "./state.ts";
import { backoffMs, retryable, type Transport } from "./transport.ts";
import { ownMetadata } from "./validate.ts";
import type { ManualEvent, ManualInput, UsageEvent, UsageInput } from "./types.ts";

/** Attempts of a manual event before its error reaches the caller. */
const MANUAL_ATTEMPTS = 3;
/** Manual event ids remembered, so that a repeated idempotency key is not counted twice locally. */
const MANUAL_IDS = 10_000;
/** Plans and models already warned of as unpriced: said once each, at most this many. */
const UNPRICED_WARNINGS = 1_000;

export class Recorder {
  /** Queued usage events waiting for their user's prices. */
  readonly #unpriced = new WeakSet<UsageEvent>();
  /**
   * The caller's copy of each queued event (record's and commit's return, onUsage's argument):
   * what a caller or a callback changes in it is not sent. What the library sets later (the price
   * of usage recorded before its plan was known, `synced`) is written to both (shown, delivered).
   */
  readonly #views = new WeakMap<UsageEvent, UsageEvent>();
  readonly #manualIds = new Set<string>();
  readonly #unpricedWarned = new Set<string>();

  constructor(
    private readonly leases: Leases | null,
    private readonly queue: EventQueue,
    private readonly callbacks: Callbacks,
    private readonly warn: (message: string) => void,
  ) {}

  /**
   * Tokens of a model the plan prices none of cost $0 (SPEC: no rate, no default rate) and count
   * toward no spend cap: right for a plan that prices nothing (token caps only), a silent leak when
   * the plan prices other models (a quick start's "gpt-4.1" plan called with "gpt-4o"). Said once
   * per plan and model.
   */
  #unpricedModel(e: UserEntry, model: string | null, tokens: number, rate: Rate | null): void {
    const plan = e.config;
    if (plan === null || model === null || tokens === 0 || rate !== null) return;
    const priced = Object.keys(plan.cost_rates);
    if (priced.length === 0) return;
    const key = `${e.planId ?? ""}\u0000${model}`;
    if (this.#unpricedWarned.has(key) || this.#unpricedWarned.size >= UNPRICED_WARNINGS) return;
    this.#unpricedWarned.add(key);
    this.warn(
      `model "${model}" has no rate in ${e.userId}'s plan (its cost_rates price ${priced.slice(0, 3).join(", ")}${priced.length > 3 ? ", ..." : ""}) and the plan has no default_cost_rate: its tokens cost $0 and count toward no spend cap; add the model to the plan's cost_rates`,
    );
  }

  /** The event waits for its user's prices: not delivered yet. */
  unpriced(event: UsageEvent): boolean {
    return this.#unpriced.has(event);
  }

  /** Prices, counts and queues one call's usage. */
  record(e: UserEntry, session: Session, model: string | null, used: UsageInput, metadata: Record<string, unknown> | undefined, now: number): UsageEvent {
    const inTokens = used.input_tokens ?? 0;
    const outTokens = used.output_tokens ?? 0;
    const tools = used.tool_calls ?? [];
    const plan = e.config;
    const rate = rateOf(model, plan);
    const cost_tokens = tokenCost(inTokens, outTokens, rate);
    const cost_tools = toolsCost(tools, plan);
    this.#unpricedModel(e, model, inTokens + outTokens, rate);
    const event: UsageEvent = {
      id: randomUUID(),
      user_id: e.userId,
      session_id: session.id,
      timestamp: new Date(now).toISOString(),
      model,
      input_tokens: inTokens,
      output_tokens: outTokens,
      total_tokens: inTokens + outTokens,
      tool_calls: [...tools],
      cost_tokens,
      cost_tools,
      cost_total: addDollars(cost_tokens, cost_tools),
      metadata: ownMetadata(metadata),
      synced: false,
    };
    const lease = this.leases?.spend(e, event.cost_total, model, event.total_tokens, now);
    if (lease) event.lease_id = lease;
    e.count(session, model, event.total_tokens, event.cost_total, now);
    if (plan !== null && e.loaded) e.called(model, event.cost_total, event.total_tokens);
    if (this.queue.push("usage", event)) {
      e.queued();
      if (!e.loaded && !e.unknown) {
        // The service has not answered yet: priced (and held back) until it does.
        e.recordedUnpriced(event, session);
        this.#unpriced.add(event);
      }
    }
    const view: UsageEvent = { ...event, tool_calls: [...event.tool_calls], metadata: ownMetadata(event.metadata) };
    this.#views.set(event, view);
    this.callbacks.fire(this.callbacks.usage, view);
    this.callbacks.credits(e.creditNews(now));
    return view;
  }

  /** The service acknowledged a queued usage event. */
  delivered(event: UsageEvent): void {
    event.synced = true;
    const view = this.#views.get(event);
    if (view) view.synced = true;
  }

  /** Prices the usage recorded before the plan was known, now that it is (or the user has none). */
  price(e: UserEntry): void {
    const plan = e.config;
    for (const { event, session } of e.takeUnpriced()) {
      this.#unpriced.delete(event);
      if (plan === null) continue;
      const model = e.model(event.model);
      if (event.model !== null && model !== event.model) {
        // Counted under the raw name while the plan was unknown.
        e.renameTokens(event.model, model!, event.total_tokens);
      }
      event.model = model;
      const rate = rateOf(model, plan);
      event.cost_tokens = tokenCost(event.input_tokens, event.output_tokens, rate);
      this.#unpricedModel(e, model, event.total_tokens, rate);
      event.cost_tools = toolsCost(event.tool_calls, plan);
      event.cost_total = addDollars(event.cost_tokens, event.cost_tools);
      const view = this.#views.get(event);
      if (view) Object.assign(view, { model, cost_tokens: event.cost_tokens, cost_tools: event.cost_tools, cost_total: event.cost_total });
      e.countPeriod(session, model, 0, event.cost_total);
      // No window (nor the team) counted the call while the plan was unknown: it has none then.
      const at = Date.parse(event.timestamp);
      e.countWindows(model, event.total_tokens, event.cost_total, at, clockNow());
      e.countTeam(model, event.total_tokens, event.cost_total, at, clockNow());
    }
  }


  /**
   * A manual event the service stored: counted locally and announced once per event id (a
   * repeated idempotency key answers the same event). `e` and `session`: the user's cached
   * entry and the event's session in it, when the user is cached.
   */
  manual(userId: string, created: ManualEvent, input: ManualInput, e: UserEntry | undefined, session: Session | undefined, sessionId: string | null | undefined): void {
    const fresh = !this.#manualIds.has(created.id);
    if (fresh) {
      if (this.#manualIds.size >= MANUAL_IDS) this.#manualIds.clear();
      this.#manualIds.add(created.id);
    }
    const inTokens = input.input_tokens ?? 0;
    const outTokens = input.output_tokens ?? 0;
    if (e && session && fresh) e.count(session, created.model, inTokens + outTokens, created.cost, clockNow());
    const event: UsageEvent = {
      id: created.id,
      user_id: userId,
      session_id: session?.id ?? sessionId ?? null,
      timestamp: created.created_at,
      model: created.model,
      input_tokens: inTokens,
      output_tokens: outTokens,
      total_tokens: inTokens + outTokens,
      tool_calls: input.tool_calls ?? [],
      cost_tokens: created.cost,
      cost_tools: 0,
      cost_total: created.cost,
      metadata: input.metadata ?? {},
      synced: true,
    };
    if (fresh) this.callbacks.fire(this.callbacks.usage, event);
    if (e && fresh) this.callbacks.credits(e.creditNews(clockNow()));
  }
}

/** POST /events, retried on transient failures with the same idempotency key. */
export async function postManual(transport: Transport, body: Record<string, unknown>): Promise<ManualEvent> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transport.request<ManualEvent>("POST", "/events", body);
    } catch (err) {
      if (!retryable(err) || attempt >= MANUAL_ATTEMPTS) throw err;
      await sleep(backoffMs(attempt, err));
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
