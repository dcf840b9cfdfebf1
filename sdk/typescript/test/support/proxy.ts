/**
 * A fault-injecting HTTP proxy in front of the real gateway: it simulates the network (5xx
 * answers, refused connections, answers lost after the gateway handled the request) while
 * the client library and the service stay real. It also counts requests by path.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type Fault =
  /** Answer this status without forwarding. */
  | { kind: "status"; status: number; body?: unknown }
  /** Forward, let the gateway handle it, then cut the connection before the answer. */
  | { kind: "lose" }
  /** Hold the request this long (ms) before forwarding it: a slow network or a slow service. */
  | { kind: "delay"; ms: number }
  /** Hold the request until `until()` (called when it arrives) settles, then forward it: something happens while it is on its way. */
  | { kind: "hold"; until: () => Promise<unknown> };

export class FaultProxy {
  private server: http.Server;
  private port = 0;
  private readonly target: URL;
  private faults: { match: RegExp; fault: Fault; times: number }[] = [];
  /** Requests seen, as "METHOD /path" (path without the /api/v1 prefix). */
  readonly seen: string[] = [];
  /** Requests whose answer was passed on to the client in full, the same way. */
  readonly answered: string[] = [];
  /** The gateway's answers passed on, with their status and Retry-After. */
  readonly replies: { key: string; status: number; retryAfter: string | undefined }[] = [];
  /** Requests matching `recording` answered in full: their JSON body and the gateway's JSON answer. */
  readonly exchanges: { key: string; body: any; answer: any }[] = [];
  /** Which requests' bodies and answers to keep in `exchanges`. */
  recording: RegExp | null = null;

  private constructor(targetApiUrl: string) {
    this.target = new URL(targetApiUrl);
    this.server = this.create();
  }

  static async start(targetApiUrl: string): Promise<FaultProxy> {
    const p = new FaultProxy(targetApiUrl);
    await p.up();
    return p;
  }

  /** e.g. http://127.0.0.1:1234/api/v1 */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}${this.target.pathname}`;
  }

  /** The next `times` requests whose "METHOD /path" matches get `fault`. */
  inject(match: RegExp, fault: Fault, times = 1): void {
    this.faults.push({ match, fault, times });
  }

  count(match: RegExp): number {
    return this.seen.filter((s) => match.test(s)).length;
  }

  countAnswered(match: RegExp): number {
    return this.answered.filter((s) => match.test(s)).length;
  }

  /** Stop listening: connections are refused until up(). */
  async down(): Promise<void> {
    await new Promise<void>((r) => this.server.close(() => r()));
    this.server.closeAllConnections();
  }

  async up(): Promise<void> {
    this.server = this.create();
    await new Promise<void>((r) => this.server.listen(this.port, "127.0.0.1", () => r()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (this.server.listening) await this.down();
  }

  private create(): http.Server {
    const server = http.createServer((req, res) => {
      const path = (req.url ?? "").slice(this.target.pathname.length);
      const key = `${req.method} ${path}`;
      this.seen.push(key);
      const i = this.faults.findIndex((f) => f.match.test(key));
      const fault = i >= 0 ? this.faults[i]!.fault : undefined;
      if (i >= 0 && --this.faults[i]!.times <= 0) this.faults.splice(i, 1);
      const record = this.recording?.test(key) ?? false;
      const sent: Buffer[] = [];
      if (record) req.on("data", (c: Buffer) => sent.push(c));
      // Recording reads the body as it comes: a request held (delay, hold) is forwarded from what was read.
      const read = record ? new Promise<void>((resolve) => req.on("end", resolve)) : null;
      if (fault?.kind === "status") {
        const answer = fault.body ?? { detail: "injected fault" };
        req.on("end", () => {
          if (record) this.exchanges.push({ key, body: JSON.parse(Buffer.concat(sent).toString() || "null"), answer });
          res.writeHead(fault.status, { "content-type": "application/json" });
          res.end(JSON.stringify(answer));
        });
        req.resume();
        return;
      }
      const forward = () => {
        const upstream = http.request(
          { host: this.target.hostname, port: this.target.port, path: req.url, method: req.method, headers: req.headers },
          (up) => {
            if (fault?.kind === "lose") {
              // The gateway has answered: the work is done, but the client never hears of it.
              up.resume();
              up.on("end", () => req.socket.destroy());
              return;
            }
            this.replies.push({ key, status: up.statusCode ?? 502, retryAfter: up.headers["retry-after"] });
            res.writeHead(up.statusCode ?? 502, up.headers);
            const got: Buffer[] = [];
            if (record) up.on("data", (c: Buffer) => got.push(c));
            res.on("finish", () => {
              if (record) this.exchanges.push({ key, body: JSON.parse(Buffer.concat(sent).toString() || "null"), answer: JSON.parse(Buffer.concat(got).toString() || "null") });
              this.answered.push(key);
            });
            up.pipe(res);
          },
        );
        upstream.on("error", () => req.socket.destroy());
        if (read === null) req.pipe(upstream);
        else void read.then(() => upstream.end(Buffer.concat(sent)));
      };
      if (fault?.kind === "delay") setTimeout(forward, fault.ms);
      else if (fault?.kind === "hold") void fault.until().finally(forward);
      else forward();
    });
    server.keepAliveTimeout = 1_000;
    return server;
  }
}
