import { UserDirectory, userDayBytes, type UserDay } from "../domain/user-columns.ts";

/** A product's cached days and the numbering their columns use. */
export interface ProductUsers {
  dir: UserDirectory;
  /** By day: the rollup version the columns were read at. */
  days: Map<string, { version: string; day: UserDay }>;
}

/**
 * The per-user columns of days already read, by product and day, each kept with the version
 * of the day rollup it was read at: a query reads every day document anyway, and reads a
 * day's user chunks again only when its version changed (today's, a day given late facts) or
 * the day was evicted. Bounded by `maxBytes` (columns plus each product's numbering), least
 * recently used day first; a product whose last day goes loses its numbering too.
 *
 * Exact whatever the timing: the roller writes a day's chunks before its day document, so
 * columns read after a document are at least as new as its version, and a later write of the
 * day changes the version and so invalidates them.
 */
export class UserDayCache {
  private readonly products = new Map<string, ProductUsers>();
  /** `<product>\n<day>`, least recently used first. */
  private readonly lru = new Map<string, { productId: string; day: string; bytes: number }>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /**
   * The product's numbering and cached days, registered so that concurrent queries share one
   * numbering; each caller hands it back with `release` when done.
   */
  product(productId: string): ProductUsers {
    let p = this.products.get(productId);
    if (!p) this.products.set(productId, (p = { dir: new UserDirectory(), days: new Map() }));
    return p;
  }

  /** Forgets a product left without cached days (nothing was kept, or all were evicted). */
  release(productId: string, p: ProductUsers): void {
    if (p.days.size === 0 && this.products.get(productId) === p) this.products.delete(productId);
  }

  /** The day's columns if cached at this version. */
  get(p: ProductUsers, productId: string, day: string, version: string): UserDay | undefined {
    const hit = p.days.get(day);
    if (!hit || hit.version !== version) return undefined;
    const key = `${productId}\n${day}`;
    const e = this.lru.get(key);
    if (e) {
      this.lru.delete(key);
      this.lru.set(key, e);
    }
    return hit.day;
  }

  /**
   * Keeps a day's columns, numbered by `p.dir`. Skipped when the product's numbering was
   * replaced meanwhile (evicted and read again by another query): columns cannot mix numberings.
   */
  put(p: ProductUsers, productId: string, day: string, version: string, columns: UserDay): void {
    if (this.maxBytes <= 0) return;
    const current = this.products.get(productId);
    if (current && current !== p) return;
    if (!current) this.products.set(productId, p);
    const key = `${productId}\n${day}`;
    const old = this.lru.get(key);
    if (old) {
      this.lru.delete(key);
      this.bytes -= old.bytes;
    }
    const bytes = userDayBytes(columns);
    p.days.set(day, { version, day: columns });
    this.lru.set(key, { productId, day, bytes });
    this.bytes += bytes;
    this.evict();
  }

  /** Bytes held: columns plus numberings (approximate). */
  size(): number {
    let dirs = 0;
    for (const p of this.products.values()) dirs += p.dir.bytes;
    return this.bytes + dirs;
  }

  private evict(): void {
    let total = this.size();
    while (this.lru.size > 0 && total > this.maxBytes) {
      const [key, e] = this.lru.entries().next().value!;
      this.lru.delete(key);
      this.bytes -= e.bytes;
      total -= e.bytes;
      const p = this.products.get(e.productId);
      if (!p) continue;
      p.days.delete(e.day);
      if (p.days.size > 0) continue;
      this.products.delete(e.productId);
      total -= p.dir.bytes;
    }
  }
}
