// `meterFastify`: a Fastify plugin (Fastify 4 and 5) that answers a call blocked by a hard
// gate with JSON 429, leaving every other error to the error handler in place before it.
// No dependency on Fastify: it is registered like any plugin and uses only the instance's API.
import { limitBody, limitOf, limitStatus, retryAfterSeconds } from "./limit-response.ts";

export { limitBody, limitOf, retryAfterSeconds, type LimitBody } from "./limit-response.ts";

/** The parts of a Fastify instance and reply the plugin uses. */
interface Reply {
  code(status: number): Reply;
  header(name: string, value: string): Reply;
  send(body: unknown): Reply;
}
// `any` where Fastify's own types go: the plugin must accept every version's instance without importing them.
type ErrorHandler = (this: any, error: any, request: any, reply: any) => unknown;
interface Instance {
  errorHandler: ErrorHandler;
  setErrorHandler(handler: any): unknown;
}

/**
 * `await app.register(meterFastify)`: a LimitExceededError (also as the `cause` of another
 * error) becomes 429 `{detail, gate_reason, usage_pct, current_value, limit_value, resets_at}`
 * (and `credits: {balance, low_at}` when the prepaid credits ran out) with Retry-After at the blocking dimension's reset when known (a MeterUnavailableError, failClosed's outage: 503 with Retry-After). Registered at the top level it applies to every route; the error
 * handler set before it still answers everything else (set yours first).
 */
export async function meterFastify(app: Instance): Promise<void> {
  const previous = app.errorHandler;
  app.setErrorHandler(function meterErrorHandler(this: unknown, error: unknown, request: unknown, reply: Reply) {
    const limit = limitOf(error);
    if (!limit) return previous.call(this, error, request, reply);
    const retryAfter = retryAfterSeconds(limit);
    reply.code(limitStatus(limit));
    if (retryAfter !== undefined) reply.header("retry-after", String(retryAfter));
    return reply.send(limitBody(limit));
  });
}
// What fastify-plugin sets: the handler applies to the instance it is registered on, not to a child scope.
Object.defineProperty(meterFastify, Symbol.for("skip-override"), { value: true });
Object.defineProperty(meterFastify, Symbol.for("fastify.display-name"), { value: "meterline/fastify" });
