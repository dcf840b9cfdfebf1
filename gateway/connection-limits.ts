import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { httpConnectionsRefused } from "@meter/lib/metrics";
import { CONNECTION_DEFAULTS, type ConnectionLimits } from "./config.ts";

/** Open connections in all when the process's open-file limit cannot be read. */
const FALLBACK_MAX_CONNECTIONS = 10_000;

/** The process's soft limit of open files (Linux), or undefined. */
function openFileLimit(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    return Number.isSafeInteger(soft) && soft > 0 ? soft : undefined;
  } catch {
    return undefined;
  }
}

export function resolveConnectionLimits(given: Partial<ConnectionLimits> = {}): ConnectionLimits {
  const limits = { ...CONNECTION_DEFAULTS, ...given };
  // Half the handles: the other half stays for the database, peers, files and the log.
  const fileLimit = openFileLimit();
  if (limits.max === 0) limits.max = fileLimit ? Math.max(1, Math.floor(fileLimit / 2)) : FALLBACK_MAX_CONNECTIONS;
  return limits;
}

/** The Fastify server options these limits set (Node's own checks, run every second). */
export function serverTimeouts(limits: ConnectionLimits) {
  return {
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: 1_000 },
  };
}

/**
 * Caps open connections per client socket address and in all, and bounds the time a body
 * takes to arrive once the gateway reads it. A connection that sends nothing costs a file
 * handle, and a few thousand trickling ones would otherwise take every handle of the process,
 * so that health checks and every product's calls fail.
 */
export function limitConnections(server: Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.max;
  server.on("drop", () => httpConnectionsRefused.inc({ reason: "total" }));
  if (limits.maxPerAddress > 0) {
    const open = new Map<string, number>();
    server.on("connection", (socket: Socket) => {
      const address = socket.remoteAddress ?? "";
      const n = (open.get(address) ?? 0) + 1;
      if (n > limits.maxPerAddress) {
        httpConnectionsRefused.inc({ reason: "per_address" });
        socket.destroy();
        return;
      }
      open.set(address, n);
      socket.once("close", () => {
        const left = (open.get(address) ?? 1) - 1;
        if (left === 0) open.delete(address);
        else open.set(address, left);
      });
    });
  }
}

/**
 * The `preClose` hook that bounds a shutdown: idle connections close at once (Fastify), and those of requests still in
 * flight after `shutdownGraceMs` are ended. A batch whose client went away while it was being
 * stored leaves its connection open with no response to come (neither onResponse nor
 * onRequestAbort fires), and close() then waited for the keep-alive timeout, 72 s.
 */
export function boundedShutdown(server: Server, limits: ConnectionLimits): (done: () => void) => void {
  return (done) => {
    setTimeout(() => server.closeAllConnections(), limits.shutdownGraceMs).unref();
    done();
  };
}

/**
 * Starts the body deadline when the gateway begins to read a body. Registered after the
 * admission plugin, whose batches wait unread for their turn: that wait is not the client's.
 * Past the deadline the client gets 408 and the connection is closed, as by Node's own
 * request timeout (through the server's `clientError` handler).
 */
export function bodyDeadline(app: FastifyInstance, limits: ConnectionLimits): void {
  app.addHook("preParsing", async (request, reply, payload) => {
    const req = request.raw;
    if (req.complete) return payload;
    const timer = setTimeout(() => {
      if (req.complete) return;
      httpConnectionsRefused.inc({ reason: "slow_body" });
      request.log.info({ bodyTimeoutMs: limits.bodyTimeoutMs }, "request body not received in time; connection closed");
      // Answered already (e.g. 413 on its length): nothing more to say to it.
      if (reply.raw.headersSent) return req.socket.destroy();
      const err = Object.assign(new Error(`request body not received within ${limits.bodyTimeoutMs} ms`), { code: "ERR_HTTP_REQUEST_TIMEOUT" });
      app.server.emit("clientError", err, req.socket);
    }, limits.bodyTimeoutMs);
    const stop = () => clearTimeout(timer);
    req.once("end", stop);
    req.once("close", stop);
    return payload;
  });
}
