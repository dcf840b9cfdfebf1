import { Code, ConnectError } from "@connectrpc/connect";

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
    const message = list.map((i) => `${i.path} ${i.message}`).join("; ");
    return new ConnectError(message, Code.InvalidArgument, { [FIELD_ISSUES_HEADER]: encodeURIComponent(JSON.stringify(list)) });
  },
  /** A rule of the request is broken given stored state (e.g. dates required by the plan). */
  precondition: (message: string) => new ConnectError(message, Code.FailedPrecondition),
  notFound: (message: string) => new ConnectError(message, Code.NotFound),
  alreadyExists: (message: string) => new ConnectError(message, Code.AlreadyExists),
  unauthenticated: (message: string) => new ConnectError(message, Code.Unauthenticated),
  permissionDenied: (message: string) => new ConnectError(message, Code.PermissionDenied),
  tooLarge: (message: string) => new ConnectError(message, Code.ResourceExhausted),
  unavailable: (message: string) => new ConnectError(message, Code.Unavailable),
};
