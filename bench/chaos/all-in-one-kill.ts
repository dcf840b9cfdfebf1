// kill -9 of the whole `npm start` process under ingestion load, started again on the same
// ports and data directory (what systemd or Kubernetes does); then SIGTERM under load, timed.
import { outboxesEmpty } from "../../test/support/chaos.ts";
import { freePort, startAllInOne, type AllInOne } from "../../test/support/processes.ts";
import { CHAOS_ENV, faultRun, printFaults, withScene } from "../support/chaos.ts";

export default async function (): Promise<void> {
  await withScene(async (dir, rx) => {
    // The load below creates products: more than an address may create a minute by default.
    const env = { MONGODB_URL: undefined, DATA_DIR: dir, ...CHAOS_ENV, RATE_LIMIT_PRODUCT_CREATE_MAX: "1000000", PORT: String(await freePort()), RPC_PORT: String(await freePort()) };
    let aio: AllInOne = await startAllInOne(env);
    let restarted: Promise<void> = Promise.resolve();
    try {
      const row = await faultRun({
        fault: "all-in-one process",
        api: () => aio.api,
        rx,
        strike: () => {
          const dead = new Promise<void>((resolve) => aio.proc.child.once("exit", () => resolve()));
          aio.proc.child.kill("SIGKILL");
          restarted = dead.then(async () => {
            aio = await startAllInOne(env);
          });
        },
        restarted: () => restarted,
        settled: () => outboxesEmpty(`${aio.rpcBase}/metrics`),
      });
      printFaults("npm start killed (kill -9) after 12 of 48 batches, started again on its data directory", [row]);

      // Shutdown under load: SIGTERM while batches are in flight.
      let stop = false;
      const statuses = new Map<string, number>();
      const load = Array.from({ length: 4 }, async () => {
        while (!stop) {
          const key = await aio.api
            .post("/products", { name: "x" })
            .then((r) => String(r.status))
            .catch(() => "refused");
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
        }
      });
      await new Promise((r) => setTimeout(r, 1_000));
      const t0 = Date.now();
      const code = await aio.proc.stop("SIGTERM");
      const took = Date.now() - t0;
      stop = true;
      await Promise.all(load);
      console.log(`SIGTERM under load: exited with code ${code} after ${(took / 1000).toFixed(2)} s; answers meanwhile ${JSON.stringify(Object.fromEntries(statuses))}`);
    } finally {
      await aio.proc.stop();
    }
  });
}
