import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the next model response holds; every mock provider renders it in its own wire format. */
export interface Reply {
  /** Model name echoed back, as providers answer with the dated version. */
  model?: string;
  text: string;
  /** Client-side tools the model asks to run (function calls, tool_use blocks). */
  tools?: string[];
  /** Tools the provider runs itself (web search and the like). */
  serverTools?: string[];
  usage: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
  /** Streams only: send the first event (or this many), then keep the connection open until the client leaves. */
  hang?: boolean | number;
  /** Chat completion streams only: no usage chunk, as when a stream is cut before it. */
  noUsageChunk?: boolean;
  /** OpenAI background responses only: read back, they are still running (no usage yet). */
  running?: boolean;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: any;
  headers: IncomingMessage["headers"];
}

export interface MockServer {
  url: string;
  /** Every request received, in order (retried attempts included). */
  requests: ReceivedRequest[];
  reply: Reply;
  /** Status codes to answer the next requests with, before serving `reply`. */
  failures: number[];
  /** Take requests and never answer them (the client must abort). */
  silent: boolean;
  close(): Promise<void>;
}

export const DEFAULT_REPLY: Reply = { text: "Hello there, friend", usage: { input: 12, output: 5 } };

type Handler = (req: ReceivedRequest, reply: Reply, res: ServerResponse) => void;

/** A local provider: port 0 on 127.0.0.1, JSON in, JSON or SSE out, per-path handlers (a `*` in a path stands for one segment). */
export async function startMockServer(handlers: Record<string, Handler>): Promise<MockServer> {
  const open = new Set<ServerResponse>();
  const patterns = Object.entries(handlers)
    .filter(([p]) => p.includes("*"))
    .map(([p, h]) => [new RegExp(`^${p.replaceAll("*", "[^/]+")}$`), h] as const);
  const mock: MockServer = {
    url: "",
    requests: [],
    reply: DEFAULT_REPLY,
    failures: [],
    silent: false,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? "/", "http://mock");
    const path = url.pathname;
    const text = Buffer.concat(chunks).toString();
    const received = { method: req.method ?? "GET", path, query: url.searchParams, body: text ? JSON.parse(text) : undefined, headers: req.headers };
    mock.requests.push(received);
    const failure = mock.failures.shift();
    if (failure) {
      // No x-should-retry header: each SDK applies its own rule (5xx, 429, 408, 409 retried).
      res.writeHead(failure, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { type: "server_error", message: `mock failure ${failure}` } }));
      return;
    }
    const handler = handlers[path] ?? patterns.find(([pattern]) => pattern.test(path))?.[1];
    if (mock.silent) {
      open.add(res);
      res.on("close", () => open.delete(res));
      return;
    }
    if (!handler) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no mock for ${path}` } }));
      return;
    }
    open.add(res);
    res.on("close", () => open.delete(res));
    handler(received, mock.reply, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return mock;
}

export function sendJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { "content-type": "application/json", "x-request-id": "req_mock" });
  res.end(JSON.stringify(body));
}

/**
 * Writes server-sent events. With `hang`, only the first event (or the first `hang`) is
 * written and the response stays open: the client must break or abort, as a user who stops
 * reading would.
 */
export function sendEvents(res: ServerResponse, events: { event?: string; data: unknown }[], hang: boolean | number = false): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "x-request-id": "req_mock" });
  const frame = (e: { event?: string; data: unknown }) =>
    `${e.event ? `event: ${e.event}\n` : ""}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`;
  if (hang) {
    res.write(events.slice(0, hang === true ? 1 : hang).map(frame).join(""));
    return;
  }
  res.end(events.map(frame).join(""));
}

/** Splits a text into the pieces a stream sends, word by word. */
export function pieces(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [text];
}
