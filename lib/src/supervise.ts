import type { ChildProcess } from "node:child_process";
import type { Logger } from "./logger.ts";

/** Failures (exits or failed starts) within `windowMs` after which a supervisor gives up. */
export const GIVE_UP_FAILURES = 5;
export const GIVE_UP_WINDOW_MS = 60_000;
/** The first restart waits this long; each failure within the window doubles it, up to the cap. */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 4_000;

export interface SupervisedProcess {
  /** The running process, if any (undefined while it restarts). */
  readonly child: ChildProcess | undefined;
  /** Restarts done so far. */
  readonly restarts: number;
  /** Stops restarting and stops the process with `stop` (resolves when it has exited). */
  stop(stop: (child: ChildProcess) => Promise<void>): Promise<void>;
}

/**
 * Keeps a child process running, as Kubernetes keeps a pod: when it exits, or fails to start,
 * it is started again after a backoff (250 ms, doubling per failure within the last minute,
 * at most 4 s). After five failures within a minute it gives up and calls `onGiveUp` with
 * the reason, so that the launcher can exit non-zero and an outer supervisor can act.
 * `start` resolves with the process once it is ready (rejects if it cannot start).
 */
export async function supervise(opts: {
  name: string;
  logger: Logger;
  start(): Promise<ChildProcess>;
  onGiveUp(reason: Error): void;
  /** Called after each restart, once the new process is ready. */
  onRestart?(child: ChildProcess): void;
  /** A process already started (and ready); else `start` starts the first one. */
  firstChild?: ChildProcess;
}): Promise<SupervisedProcess> {
  let child: ChildProcess | undefined;
  let stopping = false;
  let restarts = 0;
  const failures: number[] = [];

  const watch = (c: ChildProcess) => {
    child = c;
    c.once("exit", (code, signal) => {
      if (child === c) child = undefined;
      if (!stopping) failed(`exited with ${signal ? `signal ${signal}` : `code ${code}`}`);
    });
  };

  const failed = (why: string) => {
    const now = Date.now();
    failures.push(now);
    while (failures.length > 0 && failures[0]! < now - GIVE_UP_WINDOW_MS) failures.shift();
    if (failures.length >= GIVE_UP_FAILURES) {
      stopping = true;
      const reason = new Error(`${opts.name} failed ${failures.length} times within ${GIVE_UP_WINDOW_MS / 1000} s (last: ${why}); giving up`);
      opts.logger.fatal({ process: opts.name }, reason.message);
      opts.onGiveUp(reason);
      return;
    }
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** (failures.length - 1));
    opts.logger.error({ process: opts.name, restartInMs: delay }, `${opts.name} ${why}; restarting`);
    setTimeout(restart, delay).unref();
  };

  const restart = () => {
    if (stopping) return;
    opts.start().then(
      (c) => {
        restarts++;
        if (stopping) {
          c.kill("SIGKILL");
          return;
        }
        watch(c);
        opts.logger.info({ process: opts.name, pid: c.pid, restarts }, `${opts.name} restarted`);
        opts.onRestart?.(c);
      },
      (err: Error) => failed(`could not start: ${err.message}`),
    );
  };

  watch(opts.firstChild ?? (await opts.start()));
  return {
    get child() {
      return child;
    },
    get restarts() {
      return restarts;
    },
    async stop(stop) {
      stopping = true;
      if (child && child.exitCode === null && child.signalCode === null) await stop(child);
    },
  };
}
