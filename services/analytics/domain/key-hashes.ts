/**
 * A set of strings kept as 53-bit hashes, in a table at most half full: 16 to 32 bytes a key
 * (128 bytes at least), against some 80 for the strings in a Set. `has` never misses a key that was
 * added; it may say yes for one that was not (about size / 2^53 a lookup), so a yes means
 * "perhaps": the caller checks exactly.
 */
export class KeyHashes {
  private table: Float64Array;
  private count = 0;

  /** Room for `expected` keys before the table grows. */
  constructor(expected = 0) {
    this.table = new Float64Array(slotsFor(expected));
  }

  /** The hashes of `keys`, in a table sized for them. */
  static of(keys: Iterable<string> & { size: number }): KeyHashes {
    const out = new KeyHashes(keys.size);
    for (const k of keys) out.add(k);
    return out;
  }

  /** What the table of `n` keys made by `of` holds in memory. */
  static bytesFor(n: number): number {
    return 8 * slotsFor(n);
  }

  get size(): number {
    return this.count;
  }

  /** What the table holds in memory. */
  get bytes(): number {
    return this.table.byteLength;
  }

  add(key: string): void {
    if (2 * (this.count + 1) > this.table.length) this.grow();
    if (place(this.table, hash53(key))) this.count++;
  }

  has(key: string): boolean {
    const h = hash53(key);
    const mask = this.table.length - 1;
    for (let i = slot(h, mask); ; i = (i + 1) & mask) {
      const v = this.table[i]!;
      if (v === h) return true;
      if (v === 0) return false;
    }
  }

  private grow(): void {
    const old = this.table;
    this.table = new Float64Array(old.length * 2);
    for (const v of old) if (v !== 0) place(this.table, v);
  }
}

/** A power of two at least twice `n`, and at least 16. */
function slotsFor(n: number): number {
  let slots = 16;
  while (slots < 2 * n) slots *= 2;
  return slots;
}

/** Puts hash `h` in the first free slot from its own (linear probing); false when it is there already. */
function place(table: Float64Array, h: number): boolean {
  const mask = table.length - 1;
  for (let i = slot(h, mask); ; i = (i + 1) & mask) {
    const v = table[i]!;
    if (v === h) return false;
    if (v === 0) {
      table[i] = h;
      return true;
    }
  }
}

/** The low 32 bits of the hash pick the slot (the table's length is a power of two). */
const slot = (h: number, mask: number) => (h % 4_294_967_296) & mask;

/**
 * cyrb53 (public domain): a 53-bit hash of a string's UTF-16 code units, never 0 here (0 marks
 * a free slot).
 */
export function hash53(s: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4_294_967_296 * (2_097_151 & h2) + (h1 >>> 0) || 1;
}
