import { Code, ConnectError } from "@connectrpc/connect";
import {
  MongoBulkWriteError,
  MongoClientClosedError,
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from "mongodb";

export { Code, ConnectError };

/**
 * Services report failures only as ConnectError with one of these codes and a message the
 * API user can act on; the gateway maps codes to HTTP statuses in one table.
 */
/** A field of the request that breaks a rule the service owns; `path` is a JSON pointer into the body. */
export interface FieldIssue {
  path: string;
  message: string;
}

/** Metadata carrying a request's field issues (URI-encoded JSON, so any name is header-safe). */
export const FIELD_ISSUES_HEADER = "meter-field-issues";
const MAX_ISSUES = 50;

/**
 * Metadata of a `resource_exhausted` error that passes when the caller waits: whole seconds
 * to wait (the gateway answers 429 with Retry-After). Without it, the request itself is too
 * large (413) and waiting changes nothing.
 */
export const RETRY_AFTER_HEADER = "meter-retry-after";

/** The seconds a `resource_exhausted` error asks its caller to wait, if it carries a hint. */
export function retryAfterHint(err: ConnectError): number | undefined {
  if (err.code !== Code.ResourceExhausted) return undefined;
  const s = Number(err.metadata.get(RETRY_AFTER_HEADER) ?? NaN);
  return Number.isFinite(s) && s >= 0 ? Math.ceil(s) : undefined;
}

/** The field issues an INVALID_ARGUMENT error carries, if any. */
export function fieldIssues(err: ConnectError): FieldIssue[] | undefined {
  const raw = err.metadata.get(FIELD_ISSUES_HEADER);
  if (!raw) return undefined;
  try {
    return JSON.parse(decodeURIComponent(raw)) as FieldIssue[];
  } catch {
    return undefined;
  }
}

export const rpcError = {
  invalid: (message: string) => new ConnectError(message, Code.InvalidArgument),
  /**
   * Fields of the request break a limit or window the service owns: the gateway answers as it
   * does to a body that fails its schema (422, with the issues).
   */
  invalidFields: (issues: FieldIssue[]) => {
    const list = issues.slice(0, MAX_ISSUES).map((i) => ({ path: i.path, message: i.message.slice(0, 300) }));
    const message = list.map((i) => (i.path ? `${i.path} ${i.message}` : i.message)).join("; ");
    return new ConnectError(message, Code.InvalidArgument, { [FIELD_ISSUES_HEADER]: encodeURIComponent(JSON.stringify(list)) });
  },
  /** A rule of the request is broken given stored state (e.g. dates required by the plan). */
  precondition: (message: string) => new ConnectError(message, Code.FailedPrecondition),
  notFound: (message: string) => new ConnectError(message, Code.NotFound),
  alreadyExists: (message: string) => new ConnectError(message, Code.AlreadyExists),
  /** The request conflicts with stored state in a way retrying as is will not fix (409). */
  conflict: (message: string) => new ConnectError(message, Code.Aborted),
  unauthenticated: (message: string) => new ConnectError(message, Code.Unauthenticated),
  permissionDenied: (message: string) => new ConnectError(message, Code.PermissionDenied),
  tooLarge: (message: string) => new ConnectError(message, Code.ResourceExhausted),
  /** More work than the service holds: the same request passes after `retryAfterS` (429 with Retry-After). */
  busy: (message: string, retryAfterS: number) =>
    new ConnectError(message, Code.ResourceExhausted, { [RETRY_AFTER_HEADER]: String(Math.max(1, Math.ceil(retryAfterS))) }),
  unavailable: (message: string) => new ConnectError(message, Code.Unavailable),
};

/** Driver errors whose names mean "the database did not answer", not "the request is wrong". */
const UNREACHABLE_NAMES = new Set(["PoolClearedError", "PoolClosedError", "WaitQueueTimeoutError"]);

/**
 * True when a MongoDB driver error says the database could not be reached (no server
 * selected, connection refused or reset, pool cleared by one, client closing): the request
 * may succeed if retried once the database is back.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  // A bulk write reports a broken connection as a MongoBulkWriteError holding the driver's error.
  if (err instanceof MongoBulkWriteError && err.errorResponse instanceof Error) return isDatabaseUnreachable(err.errorResponse);
  return (
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError ||
    // The process is shutting down: its client closed under a request still waiting for the database.
    err instanceof MongoClientClosedError ||
    err instanceof MongoServerClosedError ||
    err instanceof MongoOperationTimeoutError ||
    (err instanceof MongoError && (UNREACHABLE_NAMES.has(err.name) || err.hasErrorLabel("ResetPool"))) ||
    // The driver lets a write on a socket the database already closed escape as Node's own error
    // (EPIPE, "This socket has been ended by the other party") when the database dies mid-command.
    connectionLost(err)
  );
}

/**
 * What a failure looks like when it leaves a service: a ConnectError as raised, an unreachable
 * database as `unavailable` (the gateway answers 503 with Retry-After, clients retry), and
 * anything else as Connect makes it (`internal`/`unknown`: a bug, 500).
 */
export function toRpcError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (isDatabaseUnreachable(err)) return new ConnectError("the database is unreachable; retry shortly", Code.Unavailable, undefined, undefined, err);
  return ConnectError.from(err);
}

/** Node error codes that mean the connection to a peer broke or never opened. */
const PEER_LOST_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "ERR_STREAM_DESTROYED",
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_HTTP2_INVALID_STREAM",
  "ERR_HTTP2_INVALID_SESSION",
  "ERR_HTTP2_GOAWAY_SESSION",
  "ERR_HTTP2_SESSION_ERROR",
  "ERR_HTTP2_STREAM_ERROR",
  "ERR_HTTP2_STREAM_CANCEL",
]);

function connectionLost(err: unknown): boolean {
  return causes(err).some((e) => PEER_LOST_CODES.has(String((e as { code?: unknown }).code)));
}

function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err; e && typeof e === "object" && out.length < 10; e = (e as { cause?: unknown }).cause) out.push(e);
  return out;
}

/**
 * What a failed call to a peer service means to its caller: a connection to the peer that
 * broke or never opened (the peer process died or restarts) is `unavailable`, whatever code
 * the transport chose (Connect's Node transport reports a reset connection as `aborted`, read
 * as a conflict); answers the peer sent stay as they are.
 */
export function fromPeerError(err: unknown, callerAborted: boolean): unknown {
  if (!(err instanceof ConnectError) || err.code === Code.Unavailable) return err;
  // A stream reset by the connection's end (the peer died) rather than by an answer: Connect
  // reports it as `canceled` (CANCEL) or `internal`; `canceled` is the caller's own only if it aborted.
  const reset =
    err.rawMessage.startsWith("http/2 stream closed with error code") &&
    ((err.code === Code.Canceled && !callerAborted) || err.code === Code.Internal);
  const lost = reset || connectionLost(err.cause);
  return lost ? new ConnectError(`peer unreachable: ${err.rawMessage}`, Code.Unavailable, err.metadata, undefined, err) : err;
}
