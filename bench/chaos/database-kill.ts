// kill -9 of `npm start`'s embedded database under ingestion load: the launcher starts it
// again on the same address and files, the drivers reconnect.
import { childPids, outboxesEmpty } from "../../test/support/chaos.ts";
import { startAllInOne } from "../../test/support/processes.ts";
import { CHAOS_ENV, faultRun, printFaults, withScene } from "../support/chaos.ts";

export default async function (): Promise<void> {
  const rows = await withScene(async (dir, rx) => {
    const aio = await startAllInOne({ MONGODB_URL: undefined, DATA_DIR: dir, ...CHAOS_ENV });
    try {
      const out = [];
      for (const round of [1, 2]) {
        out.push(
          await faultRun({
            fault: `embedded database (run ${round})`,
            api: () => aio.api,
            rx,
            strike: () => {
              const [pid] = childPids(aio.proc.child.pid!, "embedded-db");
              process.kill(pid!, "SIGKILL");
            },
            settled: () => outboxesEmpty(`${aio.rpcBase}/metrics`),
          }),
        );
      }
      return out;
    } finally {
      await aio.proc.stop();
    }
  });
  printFaults("npm start, embedded database killed (kill -9) after 12 of 48 batches", rows);
}
