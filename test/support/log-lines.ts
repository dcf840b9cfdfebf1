import { Writable } from "node:stream";
import { createLogger, type Logger } from "@meter/lib/logger";

/** A logger whose JSON lines are kept in `lines`, for tests that check what a process logs. */
export function capturingLogger(level = "info"): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: createLogger("test", level, sink), lines };
}
