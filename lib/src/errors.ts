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
export const rpcError = {
  invalid: (message: string) => new ConnectError(message, Code.InvalidArgument),
  /** A rule of the request is broken given stored state (e.g. dates required by the plan). */
  precondition: (message: string) => new ConnectError(message, Code.FailedPrecondition),
  notFound: (message: string) => new ConnectError(message, Code.NotFound),
  alreadyExists: (message: string) => new ConnectError(message, Code.AlreadyExists),
  unauthenticated: (message: string) => new ConnectError(message, Code.Unauthenticated),
  permissionDenied: (message: string) => new ConnectError(message, Code.PermissionDenied),
  tooLarge: (message: string) => new ConnectError(message, Code.ResourceExhausted),
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
    (err instanceof MongoError && (UNREACHABLE_NAMES.has(err.name) || err.hasErrorLabel("ResetPool")))
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
  const lost = reset || causes(err.cause).some((e) => PEER_LOST_CODES.has(String((e as { code?: unknown }).code)));
  return lost ? new ConnectError(`peer unreachable: ${err.rawMessage}`, Code.Unavailable, err.metadata, undefined, err) : err;
}
