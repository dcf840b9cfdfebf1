import http from "node:http";
import { createHmac, timingSafeEqual } from "node:crypto";
import type { AddressInfo } from "node:net";

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
}

/**
 * What the receiver does with the n-th request (1-based): answer a status, never answer, or
 * answer once a promise settles (to hold a request open while the test changes something).
 */
export type Behaviour = (n: number, req: Received) => number | "hang" | Promise<number>;

/** A real webhook receiver on 127.0.0.1 for tests; it records everything it gets. */
export class Receiver {
  readonly received: Received[] = [];
  private server!: http.Server;
  private hung: http.ServerResponse[] = [];
  url = "";

  constructor(public behaviour: Behaviour = () => 200) {}

  async start(path = "/hook"): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        let json: unknown = null;
        try {
          json = JSON.parse(body);
        } catch {
          // recorded as is
        }
        const r: Received = { headers: req.headers, body, json, at: Date.now() };
        this.received.push(r);
        const answer = this.behaviour(this.received.length, r);
        const reply = (status: number) => res.writeHead(status, { "content-type": "text/plain" }).end("ok");
        if (typeof answer === "number") return void reply(answer);
        this.hung.push(res);
        if (answer !== "hang") void answer.then((status) => res.destroyed || reply(status));
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
    return this;
  }

  /** Requests of one event type. */
  of(type: string): Received[] {
    return this.received.filter((r) => r.headers["x-service-event"] === type);
  }

  async stop(): Promise<void> {
    for (const r of this.hung) r.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The receiver's side of the contract: recompute the signature and compare in constant time. */
export function signatureValid(secret: string, r: Received): boolean {
  const ts = r.headers["x-service-timestamp"];
  const sig = r.headers["x-service-signature"];
  if (typeof ts !== "string" || typeof sig !== "string") return false;
  const expected = Buffer.from("sha256=" + createHmac("sha256", secret).update(`${ts}.${r.body}`).digest("hex"));
  const given = Buffer.from(sig);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
