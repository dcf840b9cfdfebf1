// kill -9 of each process of `npm run start:split` in turn under ingestion load: the launcher
// starts it again on its port; the gateway answers 503 for calls that need it meanwhile.
import { childPids, outboxesEmpty } from "../../test/support/chaos.ts";
import { eventually } from "../../test/support/eventually.ts";
import { Api } from "../../test/support/http.ts";
import { freePort, freePortRange, spawnEntry } from "../../test/support/processes.ts";
import { CHAOS_ENV, faultRun, printFaults, withScene, type FaultFigures } from "../support/chaos.ts";

let last: ReturnType<typeof spawnEntry> | undefined;

export default async function (): Promise<void> {
  const rows = await withScene(async (dir, rx) => {
    const port = await freePort();
    const base = await freePortRange(5);
    const proc = (last = spawnEntry("cmd/split.ts", { PORT: String(port), RPC_BASE_PORT: String(base), MONGODB_URL: undefined, DATA_DIR: dir, ...CHAOS_ENV }));
    const api = new Api(`http://127.0.0.1:${port}/api/v1`);
    try {
      await eventually(async () => (await api.get("/health")).body.status === "ok", 120_000, "split mode to serve");
      const out: FaultFigures[] = [];
      // BENCH_CHAOS_PARTS=plans,ingestion kills only those.
      const parts = process.env.BENCH_CHAOS_PARTS?.split(",") ?? ["ingestion", "plans", "tenancy", "analytics", "webhooks", "embedded-db"];
      for (const name of parts) {
        const match = name === "embedded-db" ? "embedded-db" : `services/${name}/main.ts`;
        out.push(
          await faultRun({
            fault: name === "embedded-db" ? "embedded database" : `${name} process`,
            api: () => api,
            rx,
            strike: () => {
              process.kill(childPids(proc.child.pid!, match)[0]!, "SIGKILL");
            },
            settled: () => outboxesEmpty(`http://127.0.0.1:${base + 2}/metrics`).catch(() => false),
          }),
        );
      }
      return out;
    } finally {
      await proc.stop();
    }
  });
  printFaults("npm run start:split, one process killed (kill -9) after 12 of 48 batches", rows);
  if (process.env.BENCH_CHAOS_LOG_LEVEL) console.log(last!.output());
}
