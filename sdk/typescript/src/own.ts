/**
 * Records keyed by names users choose (models, tools). A plain `record[name]` finds
 * Object.prototype's members for "constructor", "toString" or "__proto__" (a NaN in a gate), and
 * `record["__proto__"] = n` on a plain object sets its prototype instead of a count. The library
 * has no runtime dependency, so it carries these two lines rather than the service's lib.
 */

/** The record's own value for `key`, never an inherited member. */
export function own<V>(record: Readonly<Record<string, V>> | null | undefined, key: string): V | undefined {
  return record != null && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** A record without a prototype (so any name is an ordinary key), holding a copy of `from`'s own entries. */
export function byName<V>(from?: Readonly<Record<string, V>> | null): Record<string, V> {
  const out = Object.create(null) as Record<string, V>;
  // Object.assign reads own enumerable keys, and on a prototype-less target "__proto__" is a plain key.
  return from == null ? out : Object.assign(out, from);
}
