/**
 * Model names become field names of counter documents ("cost_by_model.<model>"). MongoDB
 * reads "." as a path separator and refuses a leading "$", and the driver refuses a field
 * name holding U+0000 (BSON writes names NUL-terminated), so those (and "%", the escape
 * itself) are percent-encoded; decoding restores the name exactly. Names stored before NUL
 * was encoded never hold "%00": their "%" was already "%25".
 */
const ESCAPES: Record<string, string> = { "%": "%25", ".": "%2E", $: "%24", "\0": "%00" };

export function encodeKey(name: string): string {
  return name.replace(/[%.$\0]/g, (c) => ESCAPES[c]!);
}

export function decodeKey(key: string): string {
  return key.replace(/%(25|2E|24|00)/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

export function decodeKeys<V>(obj: Record<string, V> | undefined): Record<string, V> {
  // fromEntries defines own keys: assigning out["__proto__"] would drop the entry.
  return Object.fromEntries(Object.entries(obj ?? {}).map(([k, v]) => [decodeKey(k), v]));
}

/**
 * Event metadata is the caller's free-form object: any key goes ("a.b", "$ref"), and it is
 * never queried. It is kept as its JSON text, which stores every key exactly as sent (field
 * names could not) and passes through Extended JSON outboxes without a "$date"-like key being
 * read as a type.
 */
export function encodeMetadata(metadata: Record<string, unknown> | undefined): string {
  return JSON.stringify(metadata ?? {});
}

/** Reads stored metadata; documents written before it was kept as text hold the object itself. */
export function decodeMetadata(stored: string | Record<string, unknown> | undefined | null): Record<string, unknown> {
  if (typeof stored === "string") return JSON.parse(stored) as Record<string, unknown>;
  return stored ?? {};
}
