import http from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { REQUEST_ID_HEADER } from "@meter/lib/context";
import { API_HEADERS } from "./plugins/security-headers.ts";

/**
 * Errors Fastify answers before any route or error handler runs: a URL it cannot decode
 * (malformed percent-encoding), a path parameter past `maxParamLength`. They leave as
 * {"detail": string} like every other error of the gateway.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  // The root's onSend hooks do not run for these answers.
  reply.headers(API_HEADERS).header(REQUEST_ID_HEADER, request.id);
  if (err.code === "FST_ERR_BAD_URL") {
    return reply.status(400).send({ detail: "the URL is not valid: a path segment is not well-formed percent-encoded UTF-8" });
  }
  if (err.code === "FST_ERR_MAX_PARAM_LENGTH") {
    return reply.status(414).send({ detail: "a path segment of the URL is too long" });
  }
  return reply.status(500).send({ detail: "internal error; the request may be retried" });
}

/**
 * A query string that is not well-formed percent-encoded UTF-8 (`?prefix=%E0%A4`, `?prefix=%zz`)
 * is refused as a path segment is (400): Fastify's parser would read it literally, and a search
 * for "%zz" would answer an empty page instead of saying the request was malformed.
 */
export function refuseMalformedQueries(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  const at = request.url.indexOf("?");
  if (at >= 0 && request.url.includes("%", at)) {
    try {
      decodeURIComponent(request.url.slice(at + 1));
    } catch {
      reply.status(400).send({ detail: "the URL is not valid: the query string is not well-formed percent-encoded UTF-8" });
      return;
    }
  }
  done();
}

const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, "request headers are too large"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "the request was not received in time"],
  ERR_HTTP_HEADERS_TIMEOUT: [408, "the request headers were not received in time"],
};

/**
 * Answers a connection whose request Node's HTTP parser refused (headers too large, malformed,
 * too slow) with {"detail": string}, then closes it, as Node's own handler does in plain text.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  if (socket.writable) {
    const [status, detail] = CLIENT_ERRORS[err.code ?? ""] ?? [400, "the request is not valid HTTP"];
    const body = JSON.stringify({ detail });
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
