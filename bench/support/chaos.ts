import type { Receiver } from "../../services/webhooks/testing/receiver.ts";
import { Acknowledged, Tally, audit, chaosProduct, ingestStruckOnce, type ChaosProduct } from "../../test/support/chaos.ts";
import type { Api } from "../../test/support/http.ts";

/** What bench:chaos's fault scenarios hand to the stack they start: fast takeover of a dead claimant's job. */
export const CHAOS_ENV = { WEBHOOKS_ALLOW_INSECURE_URLS: "true", RECOVERY_AFTER_MS: "2000", RELAY_INTERVAL_MS: "200", LOG_LEVEL: process.env.BENCH_CHAOS_LOG_LEVEL ?? "fatal" };

export interface FaultFigures {
  fault: string;
  /** From the kill until a read answers 200 again. */
  answersAgainMs: number;
  refused: string;
  lost: number;
  doubled: number;
  /** Webhook envelopes received twice (same id: at-least-once delivery across a kill). */
  redelivered: number;
  problems: string[];
}

export { withScene } from "../../test/support/chaos.ts";

/** Polls a read every 50 ms (each given 2 s) until it answers 200; resolves with when it did. */
async function answersAgain(api: () => Api, user: string): Promise<number> {
  for (;;) {
    try {
      const res = await fetch(`${api().baseUrl}/users/${user}/usage`, {
        headers: { authorization: `Bearer ${api().key}` },
        signal: AbortSignal.timeout(2_000),
      });
      if (res.status === 200) return Date.now();
    } catch {
      // down
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Runs the chaos load (48 batches of 25 usage events from 4 users, 4 at a time, a soft gate
 * every fourth batch) on a fresh product, calls `strike` after the 12th acknowledged batch,
 * then audits everything acknowledged. `api()` is read each time (a restarted process may
 * bring a new one). Figures are for the whole run: the refusals are those of the outage.
 */
export async function faultRun(opts: {
  fault: string;
  api: () => Api;
  rx: Receiver;
  strike(): void | Promise<void>;
  /** Resolves once whatever restarts the part is done (for a whole-process restart). */
  restarted?: () => Promise<void>;
  settled(): Promise<boolean>;
}): Promise<FaultFigures> {
  const p: ChaosProduct = await chaosProduct(opts.api(), opts.rx, 4);
  const ack = new Acknowledged();
  const tally = new Tally();
  let struck = 0;
  let back: Promise<number> | undefined;
  const key = p.api.key;
  const keyed = () => opts.api().withKey(key);
  p.api = new Proxy(p.api, { get: (_t, prop) => Reflect.get(keyed(), prop, keyed()) });
  await ingestStruckOnce(p, ack, tally, () => {
    struck = Date.now();
    void Promise.resolve(opts.strike());
    back = answersAgain(keyed, p.users[0]!);
  });
  await opts.restarted?.();
  const answeredAt = await back!;
  const result = await audit(p, ack, opts.rx, opts.settled);
  return { fault: opts.fault, answersAgainMs: answeredAt - struck, refused: tally.refusals(), lost: result.lost, doubled: result.doubled, redelivered: result.redelivered, problems: result.problems };
}

export function printFaults(title: string, rows: FaultFigures[]): void {
  console.log(`\n${title}`);
  console.log("fault                          answers again   refused during the outage              lost  doubled  webhooks sent again");
  for (const r of rows) {
    console.log(
      `${r.fault.padEnd(30)} ${`${(r.answersAgainMs / 1000).toFixed(2)} s`.padStart(13)}   ${r.refused.padEnd(38)} ${String(r.lost).padStart(4)} ${String(r.doubled).padStart(8)} ${String(r.redelivered).padStart(20)}`,
    );
    for (const p of r.problems) console.log(`  problem: ${p}`);
  }
}
