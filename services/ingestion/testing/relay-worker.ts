// A relay worker that dies mid-job, for relay-job.test.ts: it runs the ingestion jobs on the
// database named by MONGODB_URL / MONGODB_DB, takes the relay job, starts handing usage facts
// to analytics, prints "holding" and then hangs in that call (the test kills it there).
import { holdForever, startWorker } from "../../../test/support/killed-worker.ts";
import { createIngestionService } from "../index.ts";

await startWorker("relay-worker", createIngestionService, {
  // Never called: the relay hands over through the peers below.
  peers: { tenancy: "", plans: "http://127.0.0.1:1", ingestion: "", analytics: "", webhooks: "" },
  relayIntervalMs: 100,
  relayLockMs: Number(process.env.RELAY_LOCK_MS),
  analytics: { recordEvents: holdForever },
  webhooks: { publishGateEvents: holdForever, publishThresholdCrossings: holdForever, publishCreditEvents: holdForever },
});
