// A preload for bench/idle.ts (node --import): counts the MongoDB commands this process sends,
// by command and collection, and prints them to stderr once a minute as one line
// "COMMANDS/MIN find dirty_days=110 ...", most frequent first.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.resolve(import.meta.dirname, "../../lib/src/mongo.ts"));
const { Connection } = require("mongodb/lib/cmap/connection.js");
const counts = new Map<string, number>();
const command = Connection.prototype.command;
Connection.prototype.command = function (this: unknown, ns: unknown, cmd: Record<string, unknown>, ...rest: unknown[]) {
  const name = Object.keys(cmd)[0]!;
  const coll = cmd[name];
  const key = typeof coll === "string" ? `${name} ${coll}` : name;
  counts.set(key, (counts.get(key) ?? 0) + 1);
  return command.call(this, ns, cmd, ...rest);
};
setInterval(() => {
  const line = [...counts].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}=${v}`).join(" ");
  process.stderr.write(`COMMANDS/MIN ${line}\n`);
  counts.clear();
}, 60_000).unref();
