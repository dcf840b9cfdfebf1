import { Code, ConnectError } from "@connectrpc/connect";

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
