// `meterErrorHandler()`: an Express error handler (Express 4 and 5) that answers a call
// blocked by a hard gate with JSON 429 instead of Express's HTML page and logged stack.
// No dependency on Express: it uses only what Node's own response object offers.
import { limitBody, limitOf, limitStatus, retryAfterSeconds } from "./limit-response.ts";

export { limitBody, limitOf, retryAfterSeconds, type LimitBody } from "./limit-response.ts";

/** The parts of Express's (and Node's) response the handler uses. */
interface Response {
  headersSent: boolean;
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
}

/**
 * Add it after your routes: `app.use(meterErrorHandler())`. A LimitExceededError (also as the
 * `cause` of another error) becomes 429 `{detail, gate_reason, usage_pct, current_value,
 * limit_value, resets_at}` (and `credits: {balance, low_at}` when the prepaid credits ran out) with Retry-After at the blocking dimension's reset when known (a MeterUnavailableError, failClosed's outage: 503
 * with Retry-After); any other error goes on to the next handler.
 */
export function meterErrorHandler() {
  // Four parameters: that is how Express tells an error handler from a middleware.
  return function meterErrorHandler(err: unknown, _req: unknown, res: Response, next: (err?: unknown) => void): void {
    const limit = limitOf(err);
    if (!limit || res.headersSent) return next(err);
    const retryAfter = retryAfterSeconds(limit);
    res.statusCode = limitStatus(limit);
    res.setHeader("content-type", "application/json; charset=utf-8");
    if (retryAfter !== undefined) res.setHeader("retry-after", String(retryAfter));
    res.end(JSON.stringify(limitBody(limit)));
  };
}
