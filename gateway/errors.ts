import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { fieldIssues, retryAfterHint } from "@meter/lib/errors";
import { PATTERN_MESSAGES } from "./schemas/common.ts";

/**
 * The one table from service error codes to the HTTP statuses of the API contract.
 * Codes not listed are backend failures (500).
 */
const STATUS_BY_CODE: Partial<Record<Code, number>> = {
  [Code.InvalidArgument]: 400,
  [Code.FailedPrecondition]: 400,
  [Code.OutOfRange]: 400,
  [Code.Unauthenticated]: 401,
  [Code.PermissionDenied]: 403,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.Aborted]: 409,
  // 429 instead when the error carries a retry hint (more work than the service holds: wait).
  [Code.ResourceExhausted]: 413,
  [Code.Unavailable]: 503,
  [Code.DeadlineExceeded]: 503,
};

export function httpStatusForCode(code: Code): number {
  return STATUS_BY_CODE[code] ?? 500;
}

export interface ValidationIssue {
  location: string;
  path: string;
  message: string;
}

/** An error raised by the gateway itself, with the status and message the caller sees. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

function validationIssues(err: FastifyError): ValidationIssue[] {
  const location = err.validationContext ?? "body";
  const byPath = new Map<string, ValidationIssue>();
  for (const v of err.validation ?? []) {
    const params = v.params as Record<string, unknown>;
    // A nullable field yields one error per alternative; the "must be null" and "anyOf"
    // lines add nothing to the real problem reported beside them.
    if (v.keyword === "anyOf" || (v.keyword === "type" && params.type === "null")) continue;
    let path = v.instancePath || "/";
    let message = v.message ?? "is invalid";
    if (v.keyword === "additionalProperties" && typeof params.additionalProperty === "string") {
      path = `${v.instancePath}/${params.additionalProperty}`;
      message = "is not a known field";
    } else if (v.keyword === "required" && typeof params.missingProperty === "string") {
      path = `${v.instancePath}/${params.missingProperty}`;
      message = "is required";
    } else if (v.keyword === "format" && params.format === "uuid" && path.endsWith("/plan_id")) {
      // A plan named where its id goes ("starter"): say where the id comes from.
      message = "must be a plan's id (a UUID, from GET /api/v1/config/plans or the plan's creation), not its name";
    } else if (v.keyword === "pattern" && typeof params.pattern === "string" && Object.hasOwn(PATTERN_MESSAGES, params.pattern)) {
      message = PATTERN_MESSAGES[params.pattern]!;
    }
    if (!byPath.has(path)) byPath.set(path, { location, path, message });
  }
  return [...byPath.values()];
}

/** Seconds a client waits before retrying a 503: a database or service restart takes about that. */
export const RETRY_AFTER_S = 1;

const PUBLIC_5XX: Record<number, string> = {
  500: "internal error; the request may be retried",
  503: "a backend service is temporarily unavailable; retry shortly",
};

/**
 * Every error leaves the gateway as {"detail": string}. Body validation failures are 422 with
 * the list of issues; query and path validation failures are 400. A 5xx never shows internals.
 */
export function errorHandler(err: FastifyError | ConnectError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (err instanceof ConnectError) {
    const status = httpStatusForCode(err.code);
    const retryAfter = retryAfterHint(err);
    if (retryAfter !== undefined) {
      // The service holds as much work as it stores in a few seconds: the client backs off.
      request.log.info({ message: err.rawMessage }, "backend busy");
      return reply.status(429).header("retry-after", String(retryAfter)).send({ detail: err.rawMessage });
    }
    if (status === 503) {
      // A service or its database is down for now (restarting): the client retries.
      request.log.warn({ code: Code[err.code], message: err.rawMessage }, "backend unavailable");
      return reply.status(503).header("retry-after", String(RETRY_AFTER_S)).send({ detail: PUBLIC_5XX[503] });
    }
    if (status >= 500) {
      request.log.error({ err, code: Code[err.code] }, "backend call failed");
      return reply.status(status).send({ detail: PUBLIC_5XX[500] });
    }
    const fields = err.code === Code.InvalidArgument ? fieldIssues(err) : undefined;
    if (fields) {
      const issues: ValidationIssue[] = fields.map((i) => ({ location: "body", path: i.path, message: i.message }));
      // An issue of the whole body (a limit of the product) is said as it is, without a path.
      return reply.status(422).send({ detail: issues.map((i) => (i.path ? `body${i.path} ${i.message}` : i.message)).join("; "), issues });
    }
    return reply.status(status).send({ detail: err.rawMessage });
  }
  if (err instanceof HttpError) {
    return reply.status(err.statusCode).send({ detail: err.message });
  }
  const fe = err as FastifyError;
  if (fe.validation) {
    const issues = validationIssues(fe);
    const status = fe.validationContext === "body" ? 422 : 400;
    const summary = issues.map((i) => `${i.location}${i.path === "/" ? "" : i.path} ${i.message}`).join("; ");
    return reply.status(status).send({ detail: summary, issues });
  }
  if (fe.code === "FST_ERR_CTP_INVALID_JSON_BODY" || err instanceof SyntaxError) {
    return reply.status(400).send({ detail: "request body is not valid JSON" });
  }
  if (fe.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    const type = String(request.headers["content-type"] ?? "").split(";")[0]!.trim().slice(0, 100) || "none";
    return reply.status(415).send({ detail: `unsupported content type ${type}; send application/json` });
  }
  if (fe.code === "FST_ERR_CTP_EMPTY_JSON_BODY") {
    return reply.status(400).send({ detail: "request body is empty; send a JSON document" });
  }
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) {
    return reply.status(fe.statusCode).send({ detail: fe.message });
  }
  request.log.error({ err }, "unhandled error");
  return reply.status(500).send({ detail: PUBLIC_5XX[500] });
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return reply.status(404).send({ detail: `no route for ${request.method} ${request.url.split("?")[0]}` });
}
