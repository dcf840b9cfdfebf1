import http from "node:http";
import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import Fastify, { LogController } from "fastify";
import type { DescService } from "@bufbuild/protobuf";
import {
  Code,
  createClient,
  type Client,
  type ConnectRouter,
  type ConnectRouterOptions,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "@meter/proto/grpc/health/v1/health_pb";
import { REQUEST_ID_HEADER, currentContext, isAcceptableRequestId, runWithContext } from "./context.ts";
import { fromPeerError, toRpcError } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { metricsText, rpcDuration, rpcRequests, servedServices } from "./metrics.ts";
import { requireProduct } from "./product-scope.ts";
import { inProcessTransport } from "./rpc-in-process.ts";

/** Largest RPC message accepted; the gateway enforces tighter HTTP body limits first. */
export const RPC_MAX_BYTES = 64 * 1024 * 1024;

/**
 * One service as hosted by a process: its RPC routes, a health probe, and optional
 * background work. The same module runs alone (split) or beside the others (all-in-one).
 */
export interface ServiceModule {
  /** Short name, e.g. "tenancy". */
  readonly name: string;
  /** Fully-qualified proto service name, e.g. "meter.tenancy.v1.TenancyService". */
  readonly serviceName: string;
  routes(router: ConnectRouter): void;
  /** True when the service can reach its database. */
  healthy(): Promise<boolean>;
  /** Starts background work (relays, job workers); called once the RPC server listens. */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

export interface RpcServer {
  readonly port: number;
  /** Base URL for clients, e.g. http://127.0.0.1:9090 */
  readonly url: string;
  close(): Promise<void>;
}

/** How a call reached the modules: over the port, or from a caller in the same process. */
type Via = "network" | "in-process";

/** Carries the caller's request id into the handler's context, logs failures, and times each call. */
function serverContextInterceptor(logger: Logger, via: Via): Interceptor {
  return (next) => async (req) => {
    const incoming = req.header.get(REQUEST_ID_HEADER);
    const requestId = isAcceptableRequestId(incoming) ? incoming : randomUUID();
    return runWithContext({ requestId }, async () => {
      const started = performance.now();
      const observe = (code: string) => {
        const labels = { service: req.service.typeName, method: req.method.name, code };
        rpcRequests.inc(labels);
        rpcDuration.observe(labels, (performance.now() - started) / 1000);
      };
      try {
        const res = await next(req);
        observe("ok");
        logger.debug({ rpc: req.method.name, via, ms: Math.round(performance.now() - started) }, "rpc ok");
        return res;
      } catch (err) {
        const ce = toRpcError(err);
        observe(codeToString(ce.code));
        const fields = { rpc: req.method.name, via, code: Code[ce.code], ms: Math.round(performance.now() - started) };
        if (ce.code === Code.Internal || ce.code === Code.Unknown) {
          logger.error({ ...fields, err }, "rpc failed");
        } else if (ce.code === Code.Unavailable) {
          logger.warn({ ...fields, message: ce.rawMessage }, "rpc unavailable");
        } else {
          logger.debug({ ...fields, message: ce.rawMessage }, "rpc refused");
        }
        throw ce;
      }
    });
  };
}

/** Health service name that reports the process alive regardless of its dependencies. */
export const LIVENESS = "liveness";

async function allHealthy(modules: readonly ServiceModule[]): Promise<boolean> {
  return (await Promise.all(modules.map((m) => m.healthy()))).every(Boolean);
}

function healthRoutes(router: ConnectRouter, modules: readonly ServiceModule[]) {
  router.service(Health, {
    async check(req) {
      // "liveness" only says the process answers; a database outage must not restart pods.
      if (req.service === LIVENESS) return { status: ServingStatus.SERVING };
      const wanted = req.service
        ? modules.filter((m) => m.name === req.service || m.serviceName === req.service)
        : modules;
      if (req.service && wanted.length === 0) {
        return { status: ServingStatus.SERVICE_UNKNOWN };
      }
      return { status: (await allHealthy(wanted)) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING };
    },
  });
}

/**
 * What serves the modules, the same whichever way a call arrives: their routes and the health
 * service, the server interceptors (request id, metrics, error log; the product check) and the
 * size limit.
 */
function serverRouter(modules: readonly ServiceModule[], logger: Logger, via: Via) {
  const options: ConnectRouterOptions = { interceptors: [serverContextInterceptor(logger, via), requireProduct], readMaxBytes: RPC_MAX_BYTES };
  const routes = (router: ConnectRouter) => {
    for (const m of modules) m.routes(router);
    healthRoutes(router, modules);
  };
  return { options, routes };
}

export interface RpcListener extends RpcServer {
  /** Starts answering with these modules; until then every call fails as unavailable. */
  serve(modules: readonly ServiceModule[]): Promise<void>;
}

type NodeHandler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

/** The modules' RPCs (Connect, gRPC, gRPC-Web) on one Fastify app, beside /healthz and /metrics (unless served apart). */
async function serviceApp(modules: readonly ServiceModule[], logger: Logger, serverFactory: (handler: NodeHandler) => http.Server, metrics: boolean) {
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    serverFactory: serverFactory as never,
  });
  const { options, routes } = serverRouter(modules, logger, "network");
  await app.register(fastifyConnectPlugin, { ...options, routes });
  // For HTTP probes and people; the gRPC health service above is what the manifests probe.
  app.get("/healthz", async (_req, reply) => {
    const ok = await allHealthy(modules);
    return reply.status(ok ? 200 : 503).send({ status: ok ? "ok" : "unavailable" });
  });
  if (metrics) app.get("/metrics", metricsRoute);
  await app.ready();
  return app;
}

/**
 * /metrics alone on a port of its own (METRICS_PORT): the only thing a scraper's network
 * policy needs to reach, and never exposed with the public or gRPC port. Anything else is 404.
 */
export async function serveMetrics(opts: { port: number; host?: string; logger: Logger }): Promise<{ port: number; close(): Promise<void> }> {
  const app = Fastify({ loggerInstance: opts.logger, logController: new LogController({ disableRequestLogging: true }) });
  app.get("/metrics", metricsRoute);
  const address = await app.listen({ port: opts.port, host: opts.host ?? "127.0.0.1" });
  opts.logger.info({ address }, "metrics served apart");
  return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
}

/** Serves the process's metrics in the Prometheus text format. */
export async function metricsRoute(_req: unknown, reply: { type(t: string): unknown; send(b: string): unknown }) {
  const { contentType, body } = await metricsText();
  reply.type(contentType);
  return reply.send(body);
}

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Hands a new connection to the HTTP/2 server when it opens with the HTTP/2 connection preface
 * (gRPC and other prior-knowledge h2c clients), else to the HTTP/1.1 server (Prometheus,
 * kubelet HTTP probes, curl, Connect and gRPC-Web over HTTP/1.1). Node's cleartext HTTP/2
 * server cannot fall back to HTTP/1.1 by itself (`allowHTTP1` needs TLS), so one port serving
 * both needs this look at the first bytes; the bytes read are put back before the hand-over.
 */
function dispatchByPreface(socket: net.Socket, h1: http.Server, h2: http2.Http2Server, undecided: Set<net.Socket>): void {
  let seen = Buffer.alloc(0);
  undecided.add(socket);
  socket.once("close", () => undecided.delete(socket));
  // A connection that never says which protocol it speaks is not kept open.
  socket.setTimeout(10_000, () => socket.destroy());
  const onReadable = () => {
    let chunk: Buffer | null;
    while ((chunk = socket.read() as Buffer | null) !== null) seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2_PREFACE.length);
    const h2Prefix = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (seen.length === 0 || (h2Prefix && seen.length < H2_PREFACE.length)) return;
    socket.off("readable", onReadable);
    socket.off("error", onError);
    undecided.delete(socket);
    socket.setTimeout(0);
    socket.unshift(seen);
    (h2Prefix ? h2 : h1).emit("connection", socket);
  };
  const onError = () => socket.destroy();
  socket.on("readable", onReadable);
  socket.on("error", onError);
}

/**
 * Binds one port for the services before the modules exist, so that modules which call each
 * other can be given the final address (port 0 works). The port answers gRPC over HTTP/2
 * cleartext, and Connect, gRPC-Web, /healthz and /metrics over HTTP/1.1 or HTTP/2.
 * With `inProcess`, callers in this process that address the port's URL (`rpcClient`,
 * `grpcTransport`) reach the modules without the network once they are served (see
 * `serveInProcess`); the port still serves everyone else.
 */
export async function listenRpc(opts: {
  port: number;
  host?: string;
  logger: Logger;
  inProcess?: boolean;
  /** False when /metrics is served on a port of its own (serveMetrics). */
  metrics?: boolean;
}): Promise<RpcListener> {
  let handler: NodeHandler | undefined;
  const serve: NodeHandler = (req, res) => {
    if (handler) return handler(req, res);
    const out = res as http.ServerResponse;
    if (req.httpVersionMajor === 2) {
      out.writeHead(200, { "content-type": "application/grpc", "grpc-status": String(Code.Unavailable), "grpc-message": "starting" });
      out.end();
    } else {
      out.writeHead(503, { "content-type": "application/json" });
      out.end(JSON.stringify({ status: "starting" }));
    }
  };
  const h1 = http.createServer({ keepAliveTimeout: 65_000 }, serve as http.RequestListener);
  // The HTTP/1.1 server never listens itself (the sniffing server does); its connection
  // tracking, which closeIdleConnections() needs at shutdown, starts on "listening".
  h1.emit("listening");
  const h2 = http2.createServer({}, serve as never);
  const sessions = new Set<http2.Http2Session>();
  h2.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  const undecided = new Set<net.Socket>();
  const server = net.createServer((socket) => dispatchByPreface(socket, h1, h2, undecided));
  const host = opts.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const clientHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const url = `http://${clientHost}:${port}`;
  let app: Awaited<ReturnType<typeof serviceApp>> | undefined;
  let withdraw = () => {};
  return {
    port,
    url,
    async serve(modules) {
      let fastifyHandler: NodeHandler | undefined;
      app = await serviceApp(
        modules,
        opts.logger,
        (h) => {
          fastifyHandler = h;
          return h1;
        },
        opts.metrics ?? true,
      );
      handler = fastifyHandler;
      if (opts.inProcess) withdraw = serveInProcess(url, modules, opts.logger);
      for (const m of modules) servedServices.set({ service: m.name }, 1);
    },
    async close() {
      // From here on, callers in this process meet the closing port like everyone else.
      withdraw();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Clients keep connections open; end them so close() does not wait forever.
      for (const s of sessions) s.close();
      h1.closeIdleConnections();
      for (const socket of undecided) socket.destroy();
      // Calls in flight are answered within the 5 s a database call may wait, then cut off.
      const force = setTimeout(() => {
        for (const s of sessions) s.destroy();
        h1.closeAllConnections();
      }, 5_000);
      force.unref();
      await closed;
      clearTimeout(force);
      // Stops the connection-tracking timer "listening" started (the server itself never listened).
      h1.close(() => {});
      await app?.close();
    },
  };
}

/** Serves the modules on one port (gRPC, gRPC-Web, Connect, /healthz, /metrics unless `metrics` is false). */
export async function serveRpc(opts: {
  modules: readonly ServiceModule[];
  port: number;
  host?: string;
  logger: Logger;
  metrics?: boolean;
}): Promise<RpcServer> {
  const listener = await listenRpc(opts);
  await listener.serve(opts.modules);
  return listener;
}

/** Passes the current request id along on outgoing calls. */
const propagateRequestId: Interceptor = (next) => async (req) => {
  if (!req.header.has(REQUEST_ID_HEADER)) {
    const ctx = currentContext();
    if (ctx) req.header.set(REQUEST_ID_HEADER, ctx.requestId);
  }
  return next(req);
};

/** A peer that went away mid-call (killed, restarting) is unavailable to the caller, not a conflict. */
const peerLost: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    throw fromPeerError(err, req.signal.aborted);
  }
};

/** What every client of a peer applies, whichever way its calls travel. */
const clientOptions = { interceptors: [propagateRequestId, peerLost], readMaxBytes: RPC_MAX_BYTES, defaultTimeoutMs: 30_000 };

/** Modules served in this process, by the base URL of the port that also serves them. */
const inProcess = new Map<string, Transport>();

/**
 * How long new calls to a peer go to one HTTP/2 session before another is opened (3/4 to 5/4 of
 * it, so that processes do not turn together): a Kubernetes Service balances connections, not
 * calls, so with one session for good every call of a process went to the replica its first
 * connection reached, however many replicas were added. The session left finishes its calls
 * and closes once idle.
 */
export const RPC_SESSION_TURN_MS = 60_000;

/** The gRPC transport to a base URL: one HTTP/2 session at a time per base URL, shared by all its clients. */
const networkTransports = new Map<string, { transport: Transport; until: number }>();
function networkTransport(baseUrl: string): Transport {
  const now = Date.now();
  let t = networkTransports.get(baseUrl);
  if (!t || now >= t.until) {
    // Pings while calls are open: a peer whose node vanished without closing the connection fails
    // its calls within seconds instead of each waiting out its deadline until TCP gives up.
    const transport = createGrpcTransport({ baseUrl, ...clientOptions, pingIntervalMs: 10_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: RPC_SESSION_TURN_MS });
    t = { transport, until: now + RPC_SESSION_TURN_MS * (0.75 + Math.random() / 2) };
    networkTransports.set(baseUrl, t);
  }
  return t.transport;
}

/**
 * Lets callers in this process reach the modules without the network: unary calls addressed
 * to `url` go straight to the same routes, interceptors and limits as the port
 * (`rpc-in-process.ts`), the answer still encoded and decoded as a message (so a caller never
 * holds a handler's object), a request too unless it is the message built from the caller's
 * fields for that call alone, and bounded by the same deadlines. Returns the function that
 * withdraws it.
 */
function serveInProcess(url: string, modules: readonly ServiceModule[], logger: Logger): () => void {
  const { options, routes } = serverRouter(modules, logger, "in-process");
  const transport = inProcessTransport(
    routes,
    {
      baseUrl: url,
      serverInterceptors: options.interceptors ?? [],
      clientInterceptors: clientOptions.interceptors,
      maxBytes: RPC_MAX_BYTES,
      defaultTimeoutMs: clientOptions.defaultTimeoutMs,
    },
    networkTransport(url),
  );
  inProcess.set(url, transport);
  return () => {
    if (inProcess.get(url) === transport) inProcess.delete(url);
  };
}

const transports = new Map<string, Transport>();

/**
 * Transport to a peer: in-process when the peer's modules are served in this process (the
 * choice is made per call, so clients made before the modules are served, or kept after
 * they are withdrawn, take the right way), else gRPC over one HTTP/2 session at a time per base
 * URL (RPC_SESSION_TURN_MS), shared by all its clients.
 */
export function grpcTransport(baseUrl: string): Transport {
  let t = transports.get(baseUrl);
  if (!t) {
    t = {
      unary: (...args) => (inProcess.get(baseUrl) ?? networkTransport(baseUrl)).unary(...args),
      stream: (...args) => (inProcess.get(baseUrl) ?? networkTransport(baseUrl)).stream(...args),
    };
    transports.set(baseUrl, t);
  }
  return t;
}

/** A typed client for a peer service over gRPC. */
export function rpcClient<T extends DescService>(service: T, baseUrl: string): Client<T> {
  return createClient(service, grpcTransport(baseUrl));
}
