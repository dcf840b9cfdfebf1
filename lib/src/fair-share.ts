import { counter, gauge } from "./metrics.ts";

const shareWaits = counter(
  "meter_ingestion_share_waits_total",
  "Ingestion batches held back because their product had used more than its share of recent service time while another product was being served.",
);

const shareWaiting = gauge("meter_ingestion_share_waiting", "Ingestion batches waiting now for their product's share of service time.");

interface Account {
  /** Service time (ms) of the product's batches, decayed with time constant `windowMs`, as of `at`. */
  used: number;
  at: number;
  /** What the product's last batch took: charged ahead when the next one is admitted. */
  estimate: number;
  running: number;
}

/**
 * Fair use of a process's time between products: while another product has been served in
 * the last `windowMs`, a product whose batches have taken more than `share` of recent time
 * (service time, admission to answer, decayed with time constant `windowMs`, summed over its
 * concurrent batches) waits until that falls back under its share before its next batch is
 * admitted. A product alone is never held back, so it keeps its whole throughput; with a
 * neighbour, the time it gives up is what the neighbour's requests answer in (ingestion
 * README, "No noisy neighbours"). `share` 0 turns it off.
 */
export class FairShare {
  private readonly accounts = new Map<string, Account>();
  /** The product seen last and the one seen last before it (a different product). */
  private latest = { product: "", at: -Infinity };
  private previous = { product: "", at: -Infinity };

  constructor(
    private readonly share: number,
    private readonly windowMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A request of `product` is being served (any route): its neighbours are contended while it is recent. */
  seen(product: string): void {
    const at = this.now();
    if (this.latest.product !== product) this.previous = this.latest;
    this.latest = { product, at };
  }

  /** Another product than `product` was served within the window. */
  private contended(product: string, at: number): boolean {
    const other = this.latest.product !== product ? this.latest : this.previous;
    return other.product !== "" && at - other.at < this.windowMs;
  }

  private account(product: string, at: number): Account {
    let a = this.accounts.get(product);
    if (!a) {
      if (this.accounts.size >= 4_096) this.forgetIdle(at);
      a = { used: 0, at, estimate: 0, running: 0 };
      this.accounts.set(product, a);
    }
    a.used *= Math.exp(-(at - a.at) / this.windowMs);
    a.at = at;
    return a;
  }

  private forgetIdle(at: number): void {
    for (const [product, a] of this.accounts) {
      if (a.running === 0 && a.used * Math.exp(-(at - a.at) / this.windowMs) < 1) this.accounts.delete(product);
    }
  }

  /** Waits until `product` may start a batch; resolves with the function to call when it is answered (once). */
  async admit(product: string): Promise<() => void> {
    if (this.share <= 0) return () => {};
    const budget = this.share * this.windowMs;
    let held = false;
    try {
      for (;;) {
        const at = this.now();
        const a = this.account(product, at);
        if (a.used <= budget || !this.contended(product, at)) break;
        if (!held) {
          held = true;
          shareWaits.inc();
          shareWaiting.inc();
        }
        // Until its use decays to the budget; no longer than the window, so that the end of
        // the neighbour's activity is noticed.
        const ms = Math.min(this.windowMs, this.windowMs * Math.log(a.used / budget));
        await new Promise((r) => setTimeout(r, Math.max(1, ms)));
      }
    } finally {
      if (held) shareWaiting.dec();
    }
    const start = this.now();
    const a = this.account(product, start);
    // Charged ahead, so that the product's other batches waiting now do not all pass at once.
    const charged = a.estimate;
    a.used += charged;
    a.running++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const end = this.now();
      const b = this.account(product, end);
      b.used = Math.max(0, b.used + (end - start) - charged);
      b.estimate = end - start;
      b.running--;
    };
  }
}
