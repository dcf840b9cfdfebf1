import { characters } from "@meter/lib/characters";
import { rpcError, type FieldIssue } from "@meter/lib/errors";
import type { KnownTeam, KnownUser } from "../adapters/plans.ts";
import type { IngestionDeps } from "../deps.ts";

/** The registered user, or NOT_FOUND (users of other products are not visible). */
export async function requireUser(deps: IngestionDeps, productId: string, userId: string): Promise<KnownUser> {
  if (!userId) throw rpcError.invalid("user_id is required");
  const user = (await deps.users.resolve(productId, [userId])).get(userId);
  if (!user) throw rpcError.notFound(`user "${userId}" not found`);
  return user;
}

/** The team by its external id, or NOT_FOUND. */
export async function requireTeam(deps: IngestionDeps, productId: string, teamId: string): Promise<KnownTeam> {
  if (!teamId) throw rpcError.invalid("team_id is required");
  const team = (await deps.users.resolveTeams(productId, [teamId])).get(teamId);
  if (!team) throw rpcError.notFound(`team "${teamId}" not found`);
  return team;
}

/**
 * Collects every problem of a batch, each naming its event and field (`/<index>/<field>`, as the
 * gateway's schema issues do), before refusing it whole: a client drops the events named and
 * sends the rest again, so no valid event of the batch is lost with the bad one.
 */
export class BatchProblems {
  private readonly list: FieldIssue[] = [];
  add(index: number, field: string, message: string): void {
    if (this.list.length < 50) this.list.push({ path: `/${index}/${field}`, message });
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw rpcError.invalidFields(this.list);
  }
}

const MAX_ID = 128;
const MAX_USER_ID = 255;

export function checkIds(problems: BatchProblems, i: number, e: { id: string; userId: string; timestamp?: unknown }) {
  if (!e.id || characters(e.id) > MAX_ID) problems.add(i, "id", `must be 1-${MAX_ID} characters`);
  if (!e.userId || characters(e.userId) > MAX_USER_ID) problems.add(i, "user_id", `must be 1-${MAX_USER_ID} characters`);
  if (!e.timestamp) problems.add(i, "timestamp", "is required");
}

/** Each field a finite number >= 0, and at most `max` when given. */
export function nonNegative(problems: BatchProblems, i: number, fields: Record<string, number>, max = Infinity) {
  for (const [name, value] of Object.entries(fields)) {
    if (!Number.isFinite(value) || value < 0) problems.add(i, name, "must be a finite number >= 0");
    else if (value > max) problems.add(i, name, `must be at most ${max}`);
  }
}

/** Token counts of an event up to their bounds (`@meter/rules`, rules/event-bounds.ts), as the gateway's schemas. */
export function tokensWithin(problems: BatchProblems, i: number, fields: Record<string, [bigint, number]>) {
  for (const [name, [value, max]] of Object.entries(fields)) {
    if (value < 0n || value > BigInt(max)) problems.add(i, name, `must be a whole number of tokens from 0 to ${max}`);
  }
}

/** Splits a batch into first occurrences and the count of repeated ids within it. */
export function firstOccurrences<T extends { id: string }>(events: readonly T[]): { unique: T[]; repeated: number } {
  const seen = new Set<string>();
  const unique: T[] = [];
  for (const e of events) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    unique.push(e);
  }
  return { unique, repeated: events.length - unique.length };
}
