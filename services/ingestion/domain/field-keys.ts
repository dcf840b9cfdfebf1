/**
 * Model names become field names of documents ("cost_by_model.<model>"). MongoDB reads "." as a
 * path separator and refuses a leading "$", and the driver refuses a field name holding U+0000
 * (BSON writes names NUL-terminated), so those (and "%", the escape itself) are percent-encoded.
 * The embedded database (FerretDB) also refuses an update path whose element begins or ends
 * with white space (Go's strings.TrimSpace), which a model sent as " gpt-4o" or "gpt-4o\f" would
 * be: such edge characters are written "%u" and four hex digits. Decoding restores the name
 * exactly. Names stored before NUL was encoded never hold "%00", nor "%u" before edges were:
 * their "%" was already "%25".
 */
const ESCAPES: Record<string, string> = { "%": "%25", ".": "%2E", $: "%24", "\0": "%00" };

/** White space at either end of a name, as Go's unicode.IsSpace has it (JavaScript's \s lacks U+0085). */
const EDGE_SPACE = /^[\s\u0085]+|[\s\u0085]+$/g;

const unicodeEscape = (run: string) => [...run].map((c) => `%u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`).join("");

/** What MongoDB and its driver need of a field name: "%", ".", "$" and U+0000 escaped. */
const escapeReserved = (name: string) => name.replace(/[%.$\0]/g, (c) => ESCAPES[c]!);

export function encodeKey(name: string): string {
  return escapeReserved(name).replace(EDGE_SPACE, unicodeEscape);
}

/**
 * A grant id as a field name of a credit account ("grants.<id>", and the keys of its entries):
 * escaped as encodeKey was before white space at the ends was. The API refuses a grant id with
 * white space at an end (the embedded database could not store it), and accounts on MongoDB may
 * hold one stored that way before: escaping it now would lose it.
 */
export function encodeGrantKey(id: string): string {
  return escapeReserved(id);
}

export function decodeKey(key: string): string {
  return key.replace(/%(25|2E|24|00)|%u([0-9A-F]{4})/g, (_, hex?: string, code?: string) => String.fromCharCode(parseInt(hex ?? code!, 16)));
}

/**
 * A map of amounts keyed by encoded names, by name. Two stored keys may name one model: one
 * written as it was on MongoDB before edge white space was escaped, one written since; their
 * amounts are added with `add` (whole units add exactly as numbers; dollars: rules' addDollars).
 */
export function decodeKeys(obj: Record<string, number> | undefined, add = (a: number, b: number) => a + b): Record<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of Object.entries(obj ?? {})) {
    const name = decodeKey(k);
    const had = out.get(name);
    out.set(name, had === undefined ? v : add(had, v));
  }
  // fromEntries defines own keys: assigning out["__proto__"] would drop the entry.
  return Object.fromEntries(out);
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
