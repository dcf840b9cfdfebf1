// `npm run bench:sdk-python`: the Python client library against the real stack in-process
// (embedded database): guard on a loaded user (target: median <= 5 µs), record, memory per
// cached user, and what each model-client wrapper adds to a call (target: p50 <= 100 µs).
//   BENCH_GUARDS=100000 BENCH_RECORDS=50000 BENCH_USERS=300 BENCH_PAIRS=1000 BENCH_ROUNDS=3 npm run bench:sdk-python
//   BENCH_PARTS=core,memory,own,wrappers (the default: all) runs some of them only; BENCH_PARTS=guard the
//   guards alone, without windows and with 4 on the plan.
import { spawn } from "node:child_process";
import { ensureVenv, pythonRoot, venvBin } from "../sdk/python/venv.ts";
import { benchProduct } from "./support/bench-product.ts";

await ensureVenv();
const bench = await benchProduct("sdkpy");
console.log(`database: ${bench.database}`);
const code = await new Promise<number | null>((resolve) => {
  const child = spawn(venvBin("python"), ["-m", "bench.run"], {
    cwd: pythonRoot,
    env: { ...process.env, METER_BENCH_API_URL: bench.stack.apiUrl, METER_API_KEY: bench.apiKey },
    stdio: "inherit",
  });
  child.on("exit", (c) => resolve(c));
});
await bench.close();
process.exit(code ?? 1);
