import type { Collection, Filter, InferIdType } from "mongodb";
import { findByIds } from "@meter/lib/mongo";
import { pageRange } from "./key-range.ts";
import type { UserCache } from "./user-cache.ts";

/**
 * Reads of documents keyed by product and external id (users, teams): `_id` equality through
 * the shared cache, and `_id` ranges for listings.
 */

/** The documents that exist among `keys`, in the order asked: from `cache`, the rest in one query by `_id` list. */
export async function readThroughCache<S extends { _id: string }, D>(cache: UserCache, col: Collection<S>, keys: readonly string[], fromStored: (s: S) => D): Promise<D[]> {
  const docs = await cache.read(keys, (missing) => findByIds(col, missing as InferIdType<S>[], { raw: true }) as Promise<unknown[]> as Promise<Buffer[]>);
  return keys.flatMap((k) => {
    const doc = docs.get(k);
    return doc ? [fromStored(doc as S)] : [];
  });
}

/** Up to `limit` documents whose `_id` is `base` and a key starting with `prefix`, after the key `after`, in `_id` order: one range read. */
export async function keyPage<S extends { _id: string }>(col: Collection<S>, base: string, prefix: string, after: string | undefined, limit: number): Promise<S[]> {
  return (await col
    .find({ _id: pageRange(base, prefix, after) } as Filter<S>)
    .sort({ _id: 1 })
    .limit(limit)
    .toArray()) as S[];
}
