// Slow uploads and piled-up connections (gateway/connection-limits.ts): connections that trickle
// a body or their headers are closed within the documented time while health checks and another
// product's calls are answered, and one address cannot hold more than its share of connections.
// Traffic goes to 127.0.0.1 only; the slow clients use other loopback source addresses
// (127.0.0.2 ...) so that the test's own client is not counted with them.
import net from "node:net";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { LOCAL_PROTECTION } from "../gateway/config.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";

const BODY_TIMEOUT_MS = 1_500;
const HEADERS_TIMEOUT_MS = 1_500;
const PER_ADDRESS = 64;
/** Slow-body connections: a few hundred, spread over addresses each under PER_ADDRESS. */
const SLOW_BODIES = 240;
const SLOW_HEADERS = 40;
/** Bound on the wait for every slow connection to be closed (the timeouts plus a loaded machine's slack). */
const CLOSE_WITHIN_MS = Math.max(BODY_TIMEOUT_MS, HEADERS_TIMEOUT_MS) + 10_000;

let stack: TestStack;
let port: number;

test.before(async () => {
  stack = await startTestStack({
    protection: {
      ...LOCAL_PROTECTION,
      connections: { bodyTimeoutMs: BODY_TIMEOUT_MS, headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: 60_000, maxPerAddress: PER_ADDRESS },
    },
  });
  port = Number(new URL(stack.apiUrl).port);
});
test.after(async () => {
  await stack?.close();
});

interface Slow {
  socket: net.Socket;
  openedAt: number;
  /** When the client finished sending what it sends at once (headers, or a first header line). */
  startedAt: number;
  closed: Promise<{ at: number; received: string }>;
}

/**
 * A connection from `localAddress` that sends `head` at once and then one byte of `drip`
 * every 200 ms until the server closes it.
 */
function trickle(localAddress: string, head: string, drip: string): Slow {
  const socket = net.connect({ host: "127.0.0.1", port, localAddress });
  const slow = { socket, openedAt: Date.now(), startedAt: 0 } as Slow;
  let received = "";
  let timer: NodeJS.Timeout | undefined;
  socket.setEncoding("utf8");
  socket.on("data", (d: string) => (received += d));
  socket.on("error", () => {});
  socket.once("connect", () => {
    socket.write(head, () => (slow.startedAt = Date.now()));
    let i = 0;
    timer = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write(drip[i++ % drip.length]!);
    }, 200);
  });
  slow.closed = new Promise((resolve) =>
    socket.once("close", () => {
      clearInterval(timer);
      resolve({ at: Date.now(), received });
    }),
  );
  return slow;
}

test("connections trickling a body or headers are closed within the timeouts while others are served", async () => {
  const other = await stack.newProduct("served meanwhile");
  const body = JSON.stringify({ name: "x".repeat(200) });
  const slowBodies = Array.from({ length: SLOW_BODIES }, (_, i) =>
    trickle(
      `127.0.0.${2 + Math.floor(i / (PER_ADDRESS - 4))}`,
      `POST /api/v1/products HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    ),
  );
  const slowHeaders = Array.from({ length: SLOW_HEADERS }, () =>
    trickle("127.0.0.9", "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
  );
  const all = [...slowBodies, ...slowHeaders];

  // Served meanwhile, until every slow connection is closed: health and another product's calls.
  let closedAll = false;
  const everyClosed = Promise.all(all.map((s) => s.closed)).then((r) => ((closedAll = true), r));
  const answers: number[] = [];
  const served = (async () => {
    while (!closedAll) {
      const [health, plans] = await Promise.all([stack.api.get("/health"), other.api.get("/config/plans")]);
      answers.push(health.status, plans.status);
    }
  })();

  let timeout: NodeJS.Timeout | undefined;
  const closes = await Promise.race([
    everyClosed,
    new Promise<never>((_, reject) => {
      timeout = setTimeout(() => {
        const open = all.filter((s) => !s.socket.destroyed).length;
        for (const s of all) s.socket.destroy();
        reject(new Error(`${open} of ${all.length} slow connections still open after ${CLOSE_WITHIN_MS} ms`));
      }, CLOSE_WITHIN_MS);
    }),
  ]).finally(() => clearTimeout(timeout));
  await served;

  const bodyCloses = closes.slice(0, SLOW_BODIES);
  const longest = Math.max(...bodyCloses.map((c, i) => c.at - slowBodies[i]!.startedAt));
  console.log(`  ${SLOW_BODIES} slow bodies closed, the last ${longest} ms after its headers (body timeout ${BODY_TIMEOUT_MS} ms); ${answers.length} other requests answered meanwhile`);
  for (const c of bodyCloses) assert.match(c.received, /^HTTP\/1\.1 408 /, "the slow body is answered 408");
  for (const c of closes.slice(SLOW_BODIES)) assert.match(c.received, /^HTTP\/1\.1 408 /, "slow headers are answered 408");
  for (const [i, c] of bodyCloses.entries()) {
    assert.ok(c.at - slowBodies[i]!.startedAt >= BODY_TIMEOUT_MS - 50, "not closed before the body timeout");
  }
  assert.ok(answers.length >= 2);
  assert.ok(answers.every((s) => s === 200), `answers meanwhile: ${[...new Set(answers)].join(", ")}`);
  assert.is((await stack.api.get("/health")).status, 200, "served after them too");
});

test("connections past the cap of one address are closed at once; other addresses are served", async () => {
  const extra = 16;
  const request = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const conns = Array.from({ length: PER_ADDRESS + extra }, () => {
    const socket = net.connect({ host: "127.0.0.1", port, localAddress: "127.0.0.10" });
    let received = "";
    socket.setEncoding("utf8");
    socket.on("error", () => {});
    // Kept connections are answered; refused ones close without a byte.
    const outcome = new Promise<"answered" | "refused">((resolve) => {
      socket.on("data", (d: string) => {
        received += d;
        if (/^HTTP\/1\.1 200 [\s\S]*\r\n\r\n/.test(received)) resolve("answered");
      });
      socket.once("close", () => resolve(received ? "answered" : "refused"));
    });
    socket.once("connect", () => socket.write(request));
    return { socket, outcome };
  });
  const outcomes = await Promise.all(conns.map((c) => c.outcome));
  assert.is(outcomes.filter((o) => o === "refused").length, extra);
  assert.is(outcomes.filter((o) => o === "answered").length, PER_ADDRESS);
  assert.is((await stack.api.get("/health")).status, 200, "another address is served");
  for (const c of conns) c.socket.destroy();
});

test.run();
