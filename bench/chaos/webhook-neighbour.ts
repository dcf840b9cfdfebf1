// Noisy neighbour for webhooks (run by `npm run bench:chaos`, or on its own with
// `node --import tsx bench/chaos/webhook-neighbour.ts`): the whole stack in-process with the
// contract's settings (10 s attempt timeout, the real retry table), a quiet product whose
// gate events each produce one webhook, measured from the accepted POST to the arrival at
// its receiver: first alone; then while another product's 100-event gate batch fans out to
// its 20 endpoints (4,000 deliveries; how long they take is printed too); then while a third
// product has an endpoint that never answers and one that answers 500, with
// BENCH_NOISY_PENDING deliveries pending on each. Prints the quiet product's delivery delay
// p50/p99 in each run (target: within 2x of alone, and within 5 s).
import { pathToFileURL } from "node:url";
import { Receiver } from "../../services/webhooks/testing/receiver.ts";
import { benchProduct } from "../support/bench-product.ts";
import { GATE_TYPES, gateEventBody } from "../../test/support/gate-events.ts";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 20);
const NOISY_PENDING = Number(process.env.BENCH_NOISY_PENDING ?? 200);

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
}

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export default async function webhookNeighbour(): Promise<void> {
  const bench = await benchProduct("whneighbour", {
    services: { webhooks: { allowInsecureUrls: true }, ingestion: {} },
  });
  const quiet = await new Receiver().start();
  const hanging = await new Receiver(() => "hang").start();
  const failing = await new Receiver(() => 500).start();
  const fanned = await new Receiver().start();
  try {
    const { api } = bench;
    await api.post("/webhooks/endpoints", { url: quiet.url, subscribed_events: ["gate_event.soft_gate"] });

    /** The quiet product's delivery delays, one gate event at a time. */
    const measure = async (run: string): Promise<number[]> => {
      const delays: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const before = quiet.received.length;
        const t0 = performance.now();
        const res = await api.post("/gate-events/batch", [gateEventBody(`${run}-${i}`)]);
        if (res.body?.accepted !== 1) throw new Error(`gate event not accepted: ${res.status} ${JSON.stringify(res.body)}`);
        await waitFor(() => quiet.received.length > before, 300_000, "the quiet product's webhook");
        delays.push(performance.now() - t0);
      }
      return delays;
    };

    const alone = await measure("alone");
    const neighbour = async (name: string) => bench.api.withKey((await bench.api.withKey(undefined).post("/products", { name })).body.api_key);

    const fanApi = await neighbour("fan-out neighbour");
    for (let i = 0; i < 20; i++) await fanApi.post("/webhooks/endpoints", { url: `${fanned.url}?n=${i}`, subscribed_events: GATE_TYPES });
    const fanStart = performance.now();
    await fanApi.post("/gate-events/batch", Array.from({ length: 100 }, (_, i) => gateEventBody(`fan-${i}`, "hard_gate")));
    await waitFor(() => fanned.received.length > 0, 120_000, "the fan-out under way");
    const duringFanOut = await measure("fan-out");
    const fannedDuring = fanned.received.length;
    await waitFor(() => fanned.received.length >= 4_000, 600_000, "the 4,000 fanned-out deliveries");
    const fanOutSeconds = (performance.now() - fanStart) / 1000;

    const noisyApi = await neighbour("noisy neighbour");
    for (const rx of [hanging, failing]) {
      await noisyApi.post("/webhooks/endpoints", { url: rx.url, subscribed_events: ["gate_event.soft_gate"] });
    }
    for (let i = 0; i < NOISY_PENDING; i += 100) {
      const batch = Array.from({ length: Math.min(100, NOISY_PENDING - i) }, (_, j) => gateEventBody(`noisy-${i + j}`));
      await noisyApi.post("/gate-events/batch", batch);
    }
    await waitFor(() => hanging.received.length > 0 && failing.received.length > 0, 120_000, "the neighbour's trouble under way");
    const troubled = await measure("troubled");

    const s = (ms: number) => (ms / 1000).toFixed(2);
    const row = (name: string, d: number[]) => `| ${name} | ${d.length} | ${s(quantile(d, 0.5))} | ${s(quantile(d, 0.99))} |`;
    console.log(`webhook-neighbour (${bench.database}; machine shared with other work, figures are noisy)`);
    console.log("| quiet product's delivery | samples | delay p50 s | delay p99 s |");
    console.log("|---|---|---|---|");
    console.log(row("alone", alone));
    console.log(row("neighbour: 100-event gate batch fanned out to 20 endpoints (4,000 deliveries)", duringFanOut));
    console.log(row(`neighbour: endpoint hanging + endpoint 500, ${NOISY_PENDING} pending each`, troubled));
    for (const [name, d] of [["fan-out", duringFanOut], ["hanging + 500", troubled]] as const) {
      console.log(`${name}: p99 / alone ${(quantile(d, 0.99) / quantile(alone, 0.99)).toFixed(2)}x (target <= 2x); p99 ${s(quantile(d, 0.99))} s (target <= 5 s)`);
    }
    console.log(
      `the fan-out neighbour had ${fannedDuring} of its 4,000 deliveries while the quiet product was measured, all of them ${fanOutSeconds.toFixed(1)} s after its batch; ` +
        `the noisy neighbour's receivers got ${hanging.received.length} (hanging) and ${failing.received.length} (500) requests while measured`,
    );
  } finally {
    await Promise.all([quiet.stop(), hanging.stop(), failing.stop(), fanned.stop()]);
    await bench.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await webhookNeighbour();
  process.exit(0);
}
