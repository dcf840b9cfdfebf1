// A roll worker that dies mid-job, for jobs/roll.test.ts: it runs the analytics jobs on the
// database named by MONGODB_URL / MONGODB_DB, recomputes a day, writes its rollup, prints
// "holding" and then hangs (the test kills it there) before clearing the day's dirty marks.
import { createLogger } from "@meter/lib/logger";
import { holdForever, workerDb } from "../../../test/support/killed-worker.ts";
import { createAnalyticsService } from "../index.ts";

const module = await createAnalyticsService({
  db: await workerDb(),
  logger: createLogger("roll-worker", "silent"),
  peers: { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" },
  rollIntervalMs: 100,
  rollLeaseMs: Number(process.env.ROLL_LEASE_MS),
  faults: { afterRollupWrite: holdForever },
});
await module.start?.();
