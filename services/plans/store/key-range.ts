/**
 * `_id` ranges for listings. Keys are compared as MongoDB compares strings (UTF-8 bytes,
 * which is code point order), and so is every bound made here: the embedded database pushes
 * exactly such a range, sorted by `_id` and limited, down to its `_id` order index
 * (lib/src/embedded-db.ts, "Changes to FerretDB").
 */

/**
 * The least string above every string that starts with `prefix` (its last code point plus
 * one, skipping the surrogate range); null when there is none (only U+10FFFF code points).
 * A bound like `prefix + "\uffff"` would leave out keys with a code point above U+FFFF there.
 */
export function prefixEnd(prefix: string): string | null {
  const points = Array.from(prefix);
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      points.push(String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1));
      return points.join("");
    }
  }
  return null;
}

/** Compares strings as MongoDB does (UTF-8 bytes); JavaScript's `<` compares UTF-16 units. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * The `_id` condition of a page: keys that start with `base + prefix`, after `after` (the
 * last key of the page before) when given. Ascending `_id` order with a limit reads only the
 * page's documents.
 */
export function pageRange(base: string, prefix: string, after?: string): { $gte?: string; $gt?: string; $lt: string } {
  const start = base + prefix;
  // base always ends with ":", so the range has an end.
  const end = prefixEnd(start)!;
  if (after !== undefined && compareKeys(base + after, start) >= 0) return { $gt: base + after, $lt: end };
  return { $gte: start, $lt: end };
}
