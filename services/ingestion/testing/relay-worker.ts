// A relay worker that dies mid-job, for relay-job.test.ts: it runs the ingestion jobs on the
// database named by MONGODB_URL / MONGODB_DB, takes the relay job, starts handing usage facts
// to analytics, prints "holding" and then hangs in that call (the test kills it there).
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { createIngestionService } from "../index.ts";

const hang = () => {
  process.stdout.write("holding\n");
  return new Promise<void>(() => {});
};
const mongo = await connectMongo(process.env.MONGODB_URL!);
const module = await createIngestionService({
  db: mongo.db(process.env.MONGODB_DB!),
  logger: createLogger("relay-worker", "silent"),
  // Never called: the relay hands over through the peers below.
  peers: { tenancy: "", plans: "http://127.0.0.1:1", ingestion: "", analytics: "", webhooks: "" },
  relayIntervalMs: 100,
  relayLockMs: Number(process.env.RELAY_LOCK_MS),
  analytics: { recordEvents: hang },
  webhooks: { publishGateEvents: hang, publishThresholdCrossings: hang },
});
await module.start?.();
