// A lease outlasting its lifetime under a call that runs on: its holder renews it (asking no
// need) and keeps what it holds, even when nothing more can be granted, so no other holder is
// granted it; a call's need refused renews nothing.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { dimensionKey } from "@meter/rules";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("a lease kept past its lifetime by its holder");
const GRACE_MS = 200;
/** The service's clock, pinned by a test that steps it; the wall clock otherwise. */
let pinned: number | undefined;
withIngestion(t, { services: { ingestion: { leaseGraceMs: GRACE_MS, now: () => new Date(pinned ?? Date.now()) } } });

const TTL_MS = 1_000;

/** Asks `ask` every 200 ms until the first lease's lifetime and grace have passed twice over. */
async function keepAsking(ask: () => Promise<unknown>): Promise<void> {
  const until = Date.now() + 2 * (TTL_MS + GRACE_MS);
  while (Date.now() < until) {
    await ask();
    await new Promise((r) => setTimeout(r, 200));
  }
}

t("a holder holding the whole cap asks again with nothing left to grant: its slice stays, another holder gets nothing", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 1 });
  const first = await ingestion.acquireLease({ productId, userId, holder: "h1", need: 1, want: 1, ttlMs: BigInt(TTL_MS) });
  assert.is(first.lease!.added, 1);
  await keepAsking(async () => assert.is((await ingestion.acquireLease({ productId, userId, holder: "h1", need: 0, want: 0.5, ttlMs: BigInt(TTL_MS) })).lease!.added, 0));
  const other = await ingestion.acquireLease({ productId, userId, holder: "h2", need: 0.5, want: 0.5, ttlMs: BigInt(TTL_MS) });
  assert.equal([other.lease!.added, other.lease!.granted], [0, 0], "the first holder's dollar is still held");
});

t("the same for a window's slice", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { limits: [{ name: "rpm", metric: "requests", max: 10, window: "minute" }] });
  // Not across a minute's end: the slice of a minute is worth nothing after it.
  const msLeft = 60_000 - (Date.now() % 60_000);
  if (msLeft < 2 * (TTL_MS + GRACE_MS) + 2_000) await new Promise((r) => setTimeout(r, msLeft + 50));
  const dimension = dimensionKey({ metric: "requests", window: "minute" });
  const ask = (holder: string, need: number, want: number) => ingestion.acquireLease({ productId, userId, holder, need: 0, want: 0, ttlMs: BigInt(TTL_MS), windows: [{ dimension, need, want }] });
  assert.is((await ask("h1", 10, 10)).lease!.windows[0]!.added, 10);
  await keepAsking(async () => assert.is((await ask("h1", 0, 5)).lease!.windows[0]!.added, 0));
  assert.is((await ask("h2", 1, 1)).lease!.windows[0]!.added, 0, "the first holder's ten requests are still held");
});

t("a call's need refused renews nothing: what the holder keeps unused goes back when its lease lapses", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 1 });
  const granted = Date.now();
  pinned = granted;
  try {
    assert.is((await ingestion.acquireLease({ productId, userId, holder: "h1", need: 0.6, want: 0.6, ttlMs: BigInt(TTL_MS) })).lease!.added, 0.6);
    // Before the lease ends, a call needs more than is free (0.4): refused, the lease not renewed.
    pinned = granted + TTL_MS - 300;
    assert.is((await ingestion.acquireLease({ productId, userId, holder: "h1", need: 0.5, want: 0.5, ttlMs: BigInt(TTL_MS) })).lease!.added, 0);
    // Past the first lifetime and its grace, within the lifetime a renewal would have given.
    pinned = granted + TTL_MS + GRACE_MS + 200;
    const other = await ingestion.acquireLease({ productId, userId, holder: "h2", need: 0.8, want: 0.8, ttlMs: BigInt(TTL_MS) });
    assert.is(other.lease!.added, 0.8, "the first holder's unused 0.6 went back");
  } finally {
    pinned = undefined;
  }
});

t.run();
