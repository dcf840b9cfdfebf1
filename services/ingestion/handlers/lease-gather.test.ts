// Replicas that start together: their first lease requests for a budget nobody asked for lately
// wait for each other and are granted in one write, equal shares (leases/store.ts, LeaseStore).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("AcquireLease: first requests gathered");
// A quiet period long enough that requests sent together arrive within it on a busy machine.
withIngestion(t, { services: { ingestion: { leaseGatherMs: 300 } } });

t("four replicas asking at once for a fresh $10 cap are granted $2 each, a fifth of it, where one after the other the first took $5", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 10 });
  const ask = (holder: string) => ingestion.acquireLease({ productId, userId, holder, need: 0.01, want: 10 });
  const first = await Promise.all(["r1", "r2", "r3", "r4"].map(ask));
  assert.equal(
    first.map((r) => r.lease!.added),
    [2, 2, 2, 2],
  );
  assert.is(Math.max(...first.map((r) => r.lease!.holders)), 4, "granted in one write");
  // Asked for within the minute: the next request is granted at once, its share beside the four.
  const fifth = await ask("r5");
  assert.is(fifth.lease!.added, 0.333333333, "2 / 6, in whole nano-dollars");

  // One after the other, on a user of its own: the first request waits out the quiet period alone, then the usual shares.
  const other = await productWithUser(stack, { max_spend_per_period: 10 });
  const alone = await ingestion.acquireLease({ productId: other.productId, userId: other.userId, holder: "r1", need: 0.01, want: 10 });
  assert.is(alone.lease!.added, 5);
  const second = await ingestion.acquireLease({ productId: other.productId, userId: other.userId, holder: "r2", need: 0.01, want: 10 });
  assert.is(second.lease!.added, 1.666666666, "5 / 3, in whole nano-dollars");
});

t.run();
