/**
 * Where the library's problems go: warnings to the logger, what keeps metering off until
 * someone fixes it (a refused key, a wrong address) to its error level, and both to onError.
 * Reporting never throws: a broken logger must not break a call.
 */
import { MeterAuthenticationError, type MeterApiError } from "./errors.ts";
import type { MeterLogger } from "./types.ts";

export class Reporter {
  /** The key refusal was logged (once per client, not once per user). */
  #keyRefusedLogged = false;
  /** The service refused the key, and has accepted nothing since: what flush() rejects with. */
  refusedKey: MeterAuthenticationError | undefined;

  constructor(
    private readonly logger: MeterLogger,
    private readonly onError: ((error: Error) => void) | undefined,
    private readonly failClosed: boolean,
  ) {}

  warn(message: string, err?: Error): void {
    try {
      this.logger.warn(`[meter] ${message}${err && err.message !== message ? `: ${err.message}` : ""}`);
      if (err && this.onError) this.onError(err);
    } catch {
      // A broken logger must not break a call.
    }
  }

  /** A problem that keeps metering off until someone fixes it: the logger's error level, and onError. */
  error(message: string, err: Error): void {
    try {
      const log = this.logger.error ? this.logger.error.bind(this.logger) : this.logger.warn.bind(this.logger);
      log(`[meter] ${message}`);
      this.onError?.(err);
    } catch {
      // A broken logger must not break a call.
    }
  }

  /** What happens to a user whose session cannot be loaded. */
  fallback(): string {
    return this.failClosed ? "users whose session is not loaded are hard-gated (failClosed)" : "users whose session is not loaded run on permissive defaults";
  }

  /** The service refused the API key: every user runs unmetered by its plan (or is blocked); say so loudly, once. */
  keyRefused(err: MeterApiError): void {
    const what = err.status === 401 ? "refused the API key" : "does not let this API key read what the library needs";
    const error = new MeterAuthenticationError(
      err.status,
      `the service ${what} (${err.status}: ${err.detail}); check apiKey (or METER_API_KEY): it must be a key of the product (from POST /api/v1/products or POST /api/v1/keys; an ingest key is enough) that has not been revoked or expired. Until it is fixed, no event is delivered (they are held, see stats) and ${this.fallback()}`,
    );
    this.refusedKey = error;
    if (this.#keyRefusedLogged) return;
    this.#keyRefusedLogged = true;
    this.error(error.message, error);
  }

  /** An authenticated request succeeded: the key is (again) accepted. */
  keyAccepted(): void {
    this.refusedKey = undefined;
  }

  /** Something answers at baseURL, but not the API: a 404 of a delivery or of start()'s health check. */
  misaddressed(err: Error): void {
    this.error(err.message, err);
  }
}
