import { pino, type DestinationStream, type Logger } from "pino";
import { currentContext } from "./context.ts";

export type { Logger };

/**
 * The one logger factory: structured JSON, with the request id of the current RPC or HTTP
 * request added to every line so that one request can be followed across services.
 */
export function createLogger(
  name: string,
  level = process.env.LOG_LEVEL ?? "info",
  destination?: DestinationStream,
): Logger {
  return pino(
    {
      name,
      level,
      mixin() {
        const ctx = currentContext();
        return ctx ? { requestId: ctx.requestId } : {};
      },
      redact: {
        paths: ["req.headers.authorization", "*.api_key", "*.secret", "apiKey", "secret"],
        censor: "[redacted]",
      },
    },
    destination,
  );
}
