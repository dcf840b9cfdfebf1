// Counts the MongoDB commands this process sends and the time each kind took, by command and
// collection (getMore by its cursor's collection), for a bench to print per round.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

export interface CommandCount {
  n: number;
  ms: number;
  /** Statements: the updates, inserts or deletes of a write command; 1 for any other command. */
  statements: number;
}

/** Starts counting; `take()` returns the counts since the last take, most time first. */
export function countCommands(): { take(): [string, CommandCount][] } {
  const require = createRequire(path.resolve(import.meta.dirname, "../../lib/src/mongo.ts"));
  const { Connection } = require("mongodb/lib/cmap/connection.js");
  const counts = new Map<string, CommandCount>();
  const command = Connection.prototype.command;
  Connection.prototype.command = async function (this: unknown, ns: unknown, cmd: Record<string, unknown>, ...rest: unknown[]) {
    const name = Object.keys(cmd)[0]!;
    const coll = name === "getMore" ? cmd.collection : cmd[name];
    const key = typeof coll === "string" ? `${name} ${coll}` : name;
    // A write's list, or the driver's document sequence holding it (`documents`).
    const listed = (cmd.updates ?? cmd.documents ?? cmd.deletes) as unknown[] | { documents?: unknown[] } | undefined;
    const statements = Array.isArray(listed) ? listed.length : (listed?.documents?.length ?? 1);
    const t0 = performance.now();
    try {
      return await command.call(this, ns, cmd, ...rest);
    } finally {
      const c = counts.get(key) ?? { n: 0, ms: 0, statements: 0 };
      c.n++;
      c.statements += statements;
      c.ms += performance.now() - t0;
      counts.set(key, c);
    }
  };
  return {
    take() {
      const out = [...counts].sort((a, b) => b[1].ms - a[1].ms);
      counts.clear();
      return out;
    },
  };
}

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux); 0 elsewhere. */
export function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}
