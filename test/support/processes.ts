import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { eventually } from "./eventually.ts";
import { Api } from "./http.ts";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

// Ports handed to child processes come from below the kernel's ephemeral range (32768+ on
// Linux): a port picked there can be taken, between our check and the child's listen, by any
// socket bound to port 0 (the embedded database, outgoing connections), as was seen in CI.
const LOW = 10_000;
const HIGH = 32_000;

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** `count` consecutive free ports below the ephemeral range (split mode numbers its services from a base port). */
export async function freePortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const base = LOW + Math.floor(Math.random() * (HIGH - LOW - count));
    const ok = await Promise.all(Array.from({ length: count }, (_, i) => portFree(base + i)));
    if (ok.every(Boolean)) return base;
  }
  throw new Error("no free port range found");
}

/** A TCP port nothing listens on right now, below the ephemeral range. */
export function freePort(): Promise<number> {
  return freePortRange(1);
}

export interface Spawned {
  child: ChildProcess;
  output(): string;
  /** SIGTERM, then SIGKILL after a grace period; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Runs a TypeScript entry point of the repository as its own process, on the project's Node. */
export function spawnEntry(entry: string, env: Record<string, string | undefined>): Spawned {
  let out = "";
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return {
    child,
    output: () => out,
    stop: (signal = "SIGTERM") =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once("exit", (code) => resolve(code));
        child.kill(signal);
        setTimeout(() => child.kill("SIGKILL"), 15_000).unref();
      }),
  };
}

export interface AllInOne {
  proc: Spawned;
  /** The REST API of the process. */
  api: Api;
  /** http://127.0.0.1:<PORT> and http://127.0.0.1:<RPC_PORT>. */
  base: string;
  rpcBase: string;
}

/**
 * Starts `npm start`'s entry (`cmd/all-in-one.ts`) as its own process on free ports, with `env`
 * on top, and waits until it serves (GET /health "ok"); its output is in the error otherwise.
 */
export async function startAllInOne(env: Record<string, string | undefined>): Promise<AllInOne> {
  // Given ports are kept (a restart on the same address, as a supervisor would do).
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const rpcPort = env.RPC_PORT ? Number(env.RPC_PORT) : await freePort();
  // On a test database the webhooks key is the public development one (a start without a key on it is refused).
  const proc = spawnEntry("cmd/all-in-one.ts", { PORT: String(port), RPC_PORT: String(rpcPort), WEBHOOKS_ALLOW_DEVELOPMENT_KEY: "true", ...env });
  const base = `http://127.0.0.1:${port}`;
  const api = new Api(`${base}/api/v1`);
  await eventually(async () => (await api.get("/health")).body.status === "ok", 90_000, "all-in-one to serve").catch(async (err) => {
    await proc.stop("SIGKILL");
    throw new Error(`${err.message}\n${proc.output()}`);
  });
  return { proc, api, base, rpcBase: `http://127.0.0.1:${rpcPort}` };
}
