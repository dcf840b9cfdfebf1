// The ingestion service as its own process (split mode) beside a test stack, for the tests
// that kill it in the middle of a batch.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { Collection } from "mongodb";
import { testMongoUrl } from "../../../test/support/database.ts";
import { repoRoot } from "../../../test/support/processes.ts";
import type { TestStack } from "../../../test/support/stack.ts";

export interface IngestionProcess {
  /** Its gRPC URL. */
  url: string;
  /** Sends `signal` and resolves once the process has exited. */
  stop(signal: NodeJS.Signals): Promise<void>;
}

/**
 * The process on database `dbName`, with the stack's tenancy and plans; analytics and webhooks
 * are down (handovers wait in the outbox, which must not slow ingestion), and the recovery of
 * a killed job waits long enough that neither the sweep nor the age rule can be what completes it.
 * Resolves once it listens.
 */
export async function launchIngestion(stack: TestStack, dbName: string): Promise<IngestionProcess> {
  const env = {
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB: dbName,
    TENANCY_URL: stack.rpcUrl,
    PLANS_URL: stack.rpcUrl,
    INGESTION_URL: stack.rpcUrl,
    ANALYTICS_URL: "http://127.0.0.1:9",
    WEBHOOKS_URL: "http://127.0.0.1:9",
    RELAY_INTERVAL_MS: "200",
    RECOVERY_AFTER_MS: "600000",
  };
  const child = spawn(process.execPath, ["--import", "tsx", "services/ingestion/main.ts"], {
    cwd: repoRoot,
    env: { ...process.env, ...env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      try {
        const rec = JSON.parse(line);
        if (rec.msg === "ingestion service listening") resolve(`http://127.0.0.1:${rec.port}`);
      } catch {
        // not a log line
      }
    });
    child.once("exit", (code) => reject(new Error(`ingestion exited early (${code})`)));
  });
  const stop = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill(signal);
    await exited;
  };
  return { url, stop };
}

/**
 * SIGKILL as soon as the event `_id` is in `stored`, i.e. in the middle of the write of the
 * batch that holds it. (A point read: polling with a scan would starve the writer on the
 * embedded database.)
 */
export async function killOnceStored(proc: IngestionProcess, stored: Collection, _id: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !(await stored.findOne({ _id: _id as never }))) {
    await new Promise((r) => setTimeout(r, 5));
  }
  await proc.stop("SIGKILL");
}
