// A roll worker that dies mid-job, for jobs/roll.test.ts: it runs the analytics jobs on the
// database named by MONGODB_URL / MONGODB_DB, recomputes a day, writes its rollup, prints
// "holding" and then hangs (the test kills it there) before clearing the day's dirty marks.
import { holdForever, startWorker } from "../../../test/support/killed-worker.ts";
import { createAnalyticsService } from "../index.ts";

await startWorker("roll-worker", createAnalyticsService, {
  peers: { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" },
  rollIntervalMs: 100,
  rollLeaseMs: Number(process.env.ROLL_LEASE_MS),
  faults: { afterRollupWrite: holdForever },
});
