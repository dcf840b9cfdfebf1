import pRetry from "p-retry";
import { isDatabaseUnreachable } from "./errors.ts";
import type { Logger } from "./logger.ts";

/**
 * Runs `connect` until the database answers: a database not reachable yet (starting beside this
 * pod, an outage) is waited for with a back-off up to 30 s, each failed attempt logged, where a
 * crash would put the pod in Kubernetes' restart back-off (up to 5 minutes, long after the
 * database is back). Any other error (a bad key, a bug) ends the start at once. A SIGTERM or
 * SIGINT meanwhile ends the process (exit 0): no shutdown handler exists yet to hear it.
 */
export async function untilReachable<T>(logger: Logger, connect: () => Promise<T>): Promise<T> {
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "stopped while waiting for the database");
    process.exit(0);
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  try {
    return await pRetry(connect, {
      retries: Infinity,
      minTimeout: 500,
      maxTimeout: 30_000,
      shouldRetry: ({ error }) => isDatabaseUnreachable(error),
      onFailedAttempt: ({ error, attemptNumber }) => {
        if (isDatabaseUnreachable(error)) logger.warn({ err: error, attempt: attemptNumber }, "the database is not reachable yet; retrying");
      },
    });
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}
