import type { Logger } from "./logger.ts";

/**
 * How long a process may take to stop after SIGTERM/SIGINT before it exits anyway: within
 * Kubernetes' default 30 s grace, and short enough that an outer supervisor restarting the
 * service is not kept waiting by a database or peer that is down.
 */
export const SHUTDOWN_DEADLINE_MS = 9_000;

/**
 * How long a module's background work (jobs, deliveries under way) may take to finish when its
 * process stops: it stops while the process's port answers the calls in flight, both within
 * SHUTDOWN_DEADLINE_MS, so that no stop is cut off by the deadline with code 1.
 */
export const BACKGROUND_STOP_GRACE_MS = 6_000;

/**
 * Runs `stop` once on SIGINT/SIGTERM, then exits. If `stop` has not finished within
 * `deadlineMs` (something it waits for is down), the process exits anyway with code 1,
 * saying so. A second signal exits at once, so a stuck shutdown can always be interrupted.
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>, deadlineMs = SHUTDOWN_DEADLINE_MS): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, "shutting down");
    setTimeout(() => {
      logger.error({ deadlineMs }, "shutdown did not finish in time; exiting anyway");
      process.exit(1);
    }, deadlineMs).unref();
    stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}
