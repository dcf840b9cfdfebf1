import { rpcError } from "@meter/lib/errors";

/**
 * At most `limit` ingestion writes of one product at once in this process; the product's
 * others wait their turn, first come first served, and past `maxWaiting` waiting ones a new
 * one is refused as unavailable (503 with Retry-After: the client retries later). So one
 * product's burst occupies a bounded share of the process and of the database's write queue
 * however many requests it opens, and another product's writes and reads (sessions, usage)
 * find both free (README, "No noisy neighbours"). `limit` 0 turns it off.
 */
export class ProductWriteGate {
  private readonly products = new Map<string, { running: number; waiting: (() => void)[] }>();

  constructor(
    private readonly limit: number,
    private readonly maxWaiting = 256,
  ) {}

  async run<T>(productId: string, write: () => Promise<T>): Promise<T> {
    if (this.limit <= 0) return write();
    let p = this.products.get(productId);
    if (!p) {
      p = { running: 0, waiting: [] };
      this.products.set(productId, p);
    }
    if (p.running < this.limit) {
      p.running++;
    } else {
      if (p.waiting.length >= this.maxWaiting) {
        throw rpcError.unavailable(`more than ${this.maxWaiting} batches of this product are waiting; retry shortly`);
      }
      // The finishing write hands its place over: `running` stays as it is.
      await new Promise<void>((resolve) => p!.waiting.push(resolve));
    }
    try {
      return await write();
    } finally {
      const next = p.waiting.shift();
      if (next) next();
      else if (--p.running === 0) this.products.delete(productId);
    }
  }

  /** Writes of `productId` running and waiting now. */
  load(productId: string): { running: number; waiting: number } {
    const p = this.products.get(productId);
    return { running: p?.running ?? 0, waiting: p?.waiting.length ?? 0 };
  }
}
