import type { Logger } from "./logger.ts";

/**
 * Runs `stop` once on SIGINT/SIGTERM, then exits. A second signal exits at once, so a stuck
 * shutdown can always be interrupted.
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, "shutting down");
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
