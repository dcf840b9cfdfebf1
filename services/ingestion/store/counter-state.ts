import type { Collection } from "mongodb";
import { findByIds } from "@meter/lib/mongo";
import type { CounterState } from "../domain/counter-bounds.ts";
import type { StoredCounterDoc } from "./counters.ts";

/**
 * The figures of counters the bounds are checked against (domain/counter-bounds.ts): their
 * tokens and the models they file under, by counter id; one read by `_id` list. A counter not
 * yet written is absent.
 */
export async function counterStates(counters: Collection<StoredCounterDoc>, ids: readonly string[]): Promise<Map<string, CounterState>> {
  const docs = await findByIds(counters, ids, { projection: { tokens: 1, tokens_by_model: 1 } });
  return new Map(docs.map((d) => [d._id, { tokens: d.tokens ?? 0, models: new Set(Object.keys(d.tokens_by_model ?? {})) }]));
}
