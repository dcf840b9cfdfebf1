// Builds the embedded database (tools/embedded-db) at install time: `npm ci` runs this through
// `prepare`, so the first `npm start` and the first test do not wait minutes for Go to compile
// FerretDB. Where Go is absent it says so and succeeds: a deployment on MongoDB (MONGODB_URL)
// needs no embedded database, and a start without either says what it needs.
import { spawnSync } from "node:child_process";
import { buildEmbeddedDb } from "@meter/lib/embedded-db";

if (spawnSync("go", ["version"], { stdio: "ignore" }).error) {
  console.log("embedded database not built: no Go toolchain (`go`) on PATH; the service then needs MONGODB_URL");
} else {
  const started = Date.now();
  await buildEmbeddedDb((message) => console.log(message));
  console.log(`embedded database ready (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}
