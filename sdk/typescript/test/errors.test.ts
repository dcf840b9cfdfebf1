// Every error the library throws is a MeterError, whatever it also is (a wrong argument stays
// a TypeError), and the error classes keep their own instanceof, name and fields. The service
// here is a plain HTTP server answering what the case needs (a refusal, a 404): what is tested
// is how the library reports it.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LimitExceededError, Meter, MeterApiError, MeterError, MeterNetworkError, WebhookVerificationError, verifyWebhook } from "../src/index.ts";
import { MissingUserError, meterOpenAI } from "../src/integrations/openai.ts";
import { MeterCallbackHandler } from "../src/integrations/langchain.ts";
import { rejects } from "./support/fixtures.ts";

interface Ctx {
  server: Server;
  base: string;
  meters: Meter[];
}
const t = suite<Ctx>("sdk: every thrown error is a MeterError");

t.before(async (ctx) => {
  ctx.meters = [];
  // Users are unknown (404: permissive defaults); manual events are refused (422).
  ctx.server = createServer((req, res) => {
    const status = req.url?.startsWith("/api/v1/users/") ? 404 : req.url === "/api/v1/events" ? 422 : 404;
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ detail: status === 422 ? "cost: must be a number" : "not found" }));
  });
  ctx.server.listen(0, "127.0.0.1");
  await once(ctx.server, "listening");
  ctx.base = `http://127.0.0.1:${(ctx.server.address() as AddressInfo).port}/api/v1`;
});

t.after.each(async (ctx) => {
  await Promise.all(ctx.meters.splice(0).map((m) => m.shutdown({ timeoutMs: 100 })));
});

t.after(async (ctx) => {
  ctx.server.close();
});

function meter(ctx: Ctx, options: ConstructorParameters<typeof Meter>[0] = {}): Meter {
  const m = new Meter({ apiKey: "k", baseURL: ctx.base, logger: { warn() {}, error() {} }, ...options });
  ctx.meters.push(m);
  return m;
}

/** What `fn` throws (synchronously or by rejecting). */
async function thrown(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected an error");
}

t("a wrong argument is a TypeError and a MeterError, at construction and at every call", async (ctx) => {
  const env = process.env.METER_API_KEY;
  delete process.env.METER_API_KEY;
  try {
    const errors = [
      await thrown(() => new Meter({ baseURL: ctx.base })),
      await thrown(() => new Meter({ apiKey: "k", baseURL: "ftp://x/api/v1" })),
      await thrown(() => new Meter({ apiKey: "k", baseURL: ctx.base, flushIntervalMs: -1 })),
      await thrown(() => new Meter({ apiKey: "k", baseURL: ctx.base, leases: true, leaseFallback: "maybe" as "open" })),
      // Options read from the environment as strings: "false" would be truthy, so a string is refused.
      await thrown(() => new Meter({ apiKey: "k", baseURL: ctx.base, blocking: "false" as unknown as boolean })),
      await thrown(() => new Meter({ apiKey: "k", baseURL: ctx.base, failClosed: "no" as unknown as boolean })),
      await thrown(() => new Meter({ apiKey: "k", baseURL: ctx.base, leases: "true" as unknown as boolean })),
      // Past what a timer holds (2^31 - 1 ms), Node would fire it after 1 ms: "flush rarely" would flush constantly.
      await thrown(() => new Meter({ apiKey: "k", baseURL: ctx.base, flushIntervalMs: 3_000_000_000 })),
      await thrown(() => meter(ctx).guard("")),
      await thrown(() => meter(ctx).record("u", { input_tokens: -1 })),
      await thrown(() => meter(ctx).recordManual("u", { cost: -1 })),
      await thrown(() => meter(ctx).recordManual("u", { cost: 1, idempotency_key: "" })),
      await thrown(() => meter(ctx).withUser("u", () => 1, { session_id: "" })),
      await thrown(() => meter(ctx).call("u", {} as never, () => 1)),
      await thrown(() => verifyWebhook("{}", { "x-service-signature": `sha256=${"0".repeat(64)}`, "x-service-timestamp": "1" }, [])),
      await thrown(() => meterOpenAI({}, meter(ctx))),
      await thrown(() => new MeterCallbackHandler(meter(ctx), { user_id: "u", idleMs: 1 })),
    ];
    for (const err of errors) {
      assert.ok(err instanceof TypeError, `a TypeError: ${String(err)}`);
      assert.ok(err instanceof MeterError, `a MeterError: ${String(err)}`);
      assert.is((err as Error).name, "TypeError");
    }
  } finally {
    if (env !== undefined) process.env.METER_API_KEY = env;
  }
});

t("the service's refusal is a MeterApiError, an unreachable service a MeterNetworkError: both MeterErrors", async (ctx) => {
  const refused = await rejects(() => meter(ctx).recordManual("u", { cost: 1 }), MeterApiError);
  assert.ok(refused instanceof MeterError);
  assert.is(refused.name, "MeterApiError");
  assert.is((refused as MeterApiError).status, 422);
  assert.is((refused as MeterApiError).detail, "cost: must be a number");
  assert.not.ok(refused instanceof MeterNetworkError);

  const closed = createServer();
  closed.listen(0, "127.0.0.1");
  await once(closed, "listening");
  const port = (closed.address() as AddressInfo).port;
  closed.close();
  await once(closed, "close");
  const down = await rejects(() => meter(ctx, { baseURL: `http://127.0.0.1:${port}/api/v1` }).recordManual("u", { cost: 1 }), MeterNetworkError);
  assert.ok(down instanceof MeterError);
  assert.is(down.name, "MeterNetworkError");
  assert.is((down as MeterNetworkError).retryable, true);
});

t("a reservation committed twice, a client metered twice and a call with no user throw MeterErrors", async (ctx) => {
  const m = meter(ctx);
  const r = await m.reserve("u", { model: "m" }); // unknown user: permissive defaults
  await r.commit({ input_tokens: 1 });
  const twice = await rejects(() => r.commit({ input_tokens: 1 }), /already committed/);
  assert.ok(twice instanceof MeterError);

  const client = new OpenAI({ apiKey: "x", baseURL: `${ctx.base}/openai` });
  meterOpenAI(client, m, { user_id: "u" });
  const again = await thrown(() => meterOpenAI(client, m, { user_id: "u" }));
  assert.ok(again instanceof MeterError, String(again));
  assert.match((again as Error).message, /metered already/);

  const anonymous = meterOpenAI(new OpenAI({ apiKey: "x", baseURL: `${ctx.base}/openai`, maxRetries: 0 }), m);
  const missing = await thrown(() => anonymous.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }));
  assert.ok(missing instanceof MissingUserError, String(missing));
  assert.ok(missing instanceof MeterError);
  assert.is((missing as Error).name, "MissingUserError");
});

t("a refused webhook and a hard gate are MeterErrors that keep their class, name and fields", async () => {
  const refused = await rejects(() => verifyWebhook("{}", {}, "secret"), WebhookVerificationError);
  assert.ok(refused instanceof MeterError);
  assert.is(refused.name, "WebhookVerificationError");
  assert.is((refused as WebhookVerificationError).reason, "missing_header");

  const result = { status: "hard_gate" as const, gate_reason: "total_spend", usage_pct: 1, current_value: 1, limit_value: 1, message: "Spend limit reached" };
  const blocked = new LimitExceededError(result, new Date(0));
  assert.ok(blocked instanceof MeterError);
  assert.is(blocked.name, "LimitExceededError");
  assert.is(blocked.status, 429);
  assert.is(blocked.statusCode, 429);
  assert.is(blocked.result, result);
  // Each class still answers instanceof for its own kind only.
  assert.not.ok(blocked instanceof MeterApiError);
  assert.not.ok(new MeterApiError(500, "x") instanceof LimitExceededError);
});

t("the host's own errors are not MeterErrors", () => {
  assert.not.ok(new Error("x") instanceof MeterError);
  assert.not.ok(new TypeError("x") instanceof MeterError);
  assert.not.ok((null as unknown) instanceof MeterError);
  assert.not.ok(({ name: "MeterError" }) instanceof MeterError);
  assert.ok(new MeterError("x") instanceof Error);
});

t.run();
