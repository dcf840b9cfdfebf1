import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** `count` consecutive free ports (split mode numbers its services from a base port). */
export async function freePortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const ok = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        new Promise<boolean>((resolve) => {
          const srv = net.createServer();
          srv.once("error", () => resolve(false));
          srv.listen(base + i, "127.0.0.1", () => srv.close(() => resolve(true)));
        }),
      ),
    );
    if (ok.every(Boolean)) return base;
  }
  throw new Error("no free port range found");
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
