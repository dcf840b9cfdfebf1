import { Agent, request } from "undici";
import { envelopeBody, USER_AGENT, type Envelope } from "../domain/events.ts";
import { sign } from "../domain/secrets.ts";
import { guardedLookup, literalHostProblem, type UrlPolicy } from "./url-guard.ts";

export interface SendResult {
  /** True on a 2xx answer within the timeout. */
  ok: boolean;
  /** HTTP status of the answer; 0 when there was none (timeout, refused target, network error). */
  statusCode: number;
  responseTimeMs: number;
  /** Why there was no answer; never contains the secret. */
  error?: string;
}

/**
 * Thrown by `send` for an attempt that `close` cut off: not the receiver's failure, so not
 * recorded as an attempt; its delivery stays due and is sent again (at least once, same id).
 */
export class SenderClosedError extends Error {
  constructor() {
    super("the webhooks process stopped while the attempt was in flight; it is sent again");
    this.name = "SenderClosedError";
  }
}

/**
 * Signs and POSTs envelopes. Redirects are not followed (a 3xx counts as a failed attempt),
 * the target is re-checked against the URL policy at connect time, and the whole exchange,
 * body included, must finish within the timeout.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private closed = false;

  constructor(
    private readonly policy: UrlPolicy,
    private readonly timeoutMs: number,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.agent = new Agent({ connect: { lookup: guardedLookup(policy), timeout: timeoutMs }, keepAliveTimeout: 10_000 });
  }

  async send(url: string, secret: string, envelope: Envelope): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const refused = literalHostProblem(url, this.policy);
    if (refused) return { ok: false, statusCode: 0, responseTimeMs: 0, error: refused };
    const body = envelopeBody(envelope);
    const timestamp = Math.floor(this.now().getTime() / 1000);
    try {
      const res = await request(url, {
        method: "POST",
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
        headers: {
          "content-type": "application/json",
          "user-agent": USER_AGENT,
          "x-service-event": envelope.type,
          "x-service-delivery": envelope.id,
          "x-service-signature": sign(secret, timestamp, body),
          "x-service-timestamp": String(timestamp),
        },
        body,
      });
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      return { ok: res.statusCode >= 200 && res.statusCode < 300, statusCode: res.statusCode, responseTimeMs: elapsed() };
    } catch (err) {
      if (this.closed) throw new SenderClosedError();
      const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
      const reason = e.name === "TimeoutError" || e.name === "AbortError" ? `no answer within ${this.timeoutMs} ms` : (e.cause?.message ?? e.message);
      return { ok: false, statusCode: 0, responseTimeMs: elapsed(), error: reason };
    }
  }

  /** Ends the connections; an attempt still in flight is cut off (SenderClosedError) and sent again later. */
  async close(): Promise<void> {
    this.closed = true;
    await this.agent.destroy();
  }
}
