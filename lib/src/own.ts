/**
 * Lookups in records keyed by names users choose (models, tools, plan map keys). A plain
 * `record[name]` finds Object.prototype's members for "constructor", "toString" or
 * "__proto__"; these find only the record's own keys.
 */
export function own<V>(record: Readonly<Record<string, V>> | null | undefined, key: string): V | undefined {
  return record != null && Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * Sums values by name into a record. Built through a Map and Object.fromEntries, which
 * defines own properties: assigning `out["__proto__"] = n` would be dropped silently.
 */
export function sumByName(...records: (Readonly<Record<string, number>> | null | undefined)[]): Record<string, number> {
  const out = new Map<string, number>();
  for (const r of records) for (const [k, v] of Object.entries(r ?? {})) out.set(k, (out.get(k) ?? 0) + v);
  return Object.fromEntries(out);
}

/**
 * Sets `record[key]` as an own property: for "__proto__" a plain assignment would set the
 * record's prototype instead of an entry.
 */
export function setOwn<V>(record: Record<string, V>, key: string, value: V): void {
  if (key === "__proto__") Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
  else record[key] = value;
}
