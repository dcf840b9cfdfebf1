import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import OpenAI from "openai";
import * as assert from "uvu/assert";
import { LimitExceededError, Meter, type UsageEvent } from "../src/index.ts";
import { meterOpenAI, MissingUserError } from "../src/integrations/openai.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { close, costOf, meteredSuite } from "./metered-stack.ts";
import { startMockOpenAI } from "./mock-openai.ts";
import { DEFAULT_REPLY, type MockServer } from "./mock-server.ts";

setFlagsFromString("--expose-gc");

const t = meteredSuite("meterOpenAI", startMockOpenAI);

const client = (mock: MockServer, opts: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ apiKey: "sk-test", baseURL: `${mock.url}/v1`, maxRetries: 2, ...opts });
const ask = [{ role: "user" as const, content: "What is the weather in Paris?" }];

t("a chat completion records the provider's usage and tool calls; the service prices them exactly", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user, session_id: "conversation-7", metadata: { feature: "chat" } });
  mock.reply = { text: "Let me check.", tools: ["get_weather", "lookup"], usage: { input: 1200, output: 300 } };

  const completion = await openai.chat.completions.create({ model: "gpt-4o-2024-08-06", messages: ask });
  assert.is(completion.choices[0]!.message.tool_calls?.length, 2);

  const usage = await env.usage(user, (u) => u.total_tokens === 1500);
  assert.equal(usage.tokens_by_model, { "gpt-4o": 1500 });
  assert.is(usage.tool_calls_count, 2);
  close(usage.total_cost, costOf("gpt-4o", 1200, 300, ["get_weather", "lookup"]));
  const event = events.find((e) => e.user_id === user)!;
  assert.equal(event.metadata, { feature: "chat", provider: "openai" });
  assert.is(event.model, "gpt-4o");
  assert.is(event.session_id, "conversation-7");
});

t("a stream without include_usage: usage is requested, counted, and hidden from the caller", async ({ env, mock }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.reply = { text: "Sunny and warm today", tools: ["get_weather"], usage: { input: 800, output: 200 } };

  const stream = await openai.chat.completions.create({ model: "gpt-4o", messages: ask, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);

  assert.equal(mock.requests[0]!.body.stream_options, { include_usage: true });
  assert.ok(chunks.length > 3);
  assert.ok(chunks.every((c) => c.choices.length > 0 && !("usage" in c)), "no usage chunk or field reaches the caller");
  const usage = await env.usage(user, (u) => u.total_tokens === 1000);
  assert.is(usage.tool_calls_count, 1, "a tool call streamed in pieces is one call");
  close(usage.total_cost, costOf("gpt-4o", 800, 200, ["get_weather"]));
});

t("a stream that asked for usage keeps its usage chunk; tee() branches count once", async ({ env, mock }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  const stream = await openai.chat.completions.create({ model: "gpt-4o", messages: ask, stream: true, stream_options: { include_usage: true } });
  const lastOf = async (branch: AsyncIterable<{ usage?: { total_tokens: number } | null }>) => {
    let last;
    for await (const chunk of branch) last = chunk;
    return last?.usage?.total_tokens;
  };
  const [a, b] = stream.tee();
  assert.equal(await Promise.all([lastOf(a), lastOf(b)]), [17, 17]);
  assert.is((await env.usage(user, (u) => u.total_tokens === 17)).tool_calls_count, 0);
});

t("the Responses API, plain and streamed: usage, function calls and built-in tools", async ({ env, mock }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.reply = { text: "Found it.", tools: ["get_weather"], serverTools: ["web_search"], usage: { input: 400, output: 100 } };

  const response = await openai.responses.create({ model: "gpt-4o-2024-11-20", input: "weather?" });
  assert.is(response.output_text, "Found it.", "the SDK's own output_text transform still runs");
  const stream = await openai.responses.create({ model: "gpt-4o", input: "weather?", stream: true });
  const types = new Set<string>();
  for await (const event of stream) types.add(event.type);
  assert.ok(types.has("response.completed"));

  const usage = await env.usage(user, (u) => u.total_tokens === 1000);
  assert.is(usage.tool_calls_count, 4);
  close(usage.total_cost, 2 * costOf("gpt-4o", 400, 100, ["get_weather", "web_search"]));
});

t("a background response holds its reservation until read final, then counts its real usage once", async ({ env, mock, events }) => {
  // The capped plan: one held reservation (about $8.20 of $12) refuses the next call.
  const user = await env.newUser("capped");
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.reply = { text: "Done researching.", usage: { input: 3000, output: 1000 }, running: true };

  const queued = await openai.responses.create({ model: "gpt-4o", input: "research the weather", background: true });
  assert.is(queued.status, "queued");
  const refused = await openai.responses.create({ model: "gpt-4o", input: "x" }).catch((e) => e);
  assert.instance(refused, LimitExceededError, "the queued response still holds its reservation");

  const running = await openai.responses.retrieve(queued.id);
  assert.is(running.status, "in_progress");
  assert.instance(await openai.responses.create({ model: "gpt-4o", input: "x" }).catch((e) => e), LimitExceededError, "a running response still holds it");

  mock.reply = { ...mock.reply, running: false };
  const done = await openai.responses.retrieve(queued.id);
  assert.is(done.status, "completed");
  assert.is(done.output_text, "Done researching.", "the SDK's own output_text transform still runs");
  await openai.responses.retrieve(queued.id);

  const usage = await env.usage(user, (u) => u.total_tokens === 4000);
  close(usage.total_cost, costOf("gpt-4o", 3000, 1000));
  const mine = events.filter((e) => e.user_id === user);
  assert.is(mine.length, 1, "read final twice, counted once");
  assert.is(mine[0]!.input_tokens, 3000);
  // Settled: the reservation went back, so the next call runs.
  mock.reply = DEFAULT_REPLY;
  await openai.responses.create({ model: "gpt-4o", input: "x" });
});

t("a background response read as a stream counts at its final event; a cancelled one gives its reservation back", async ({ env, mock, events }) => {
  const user = await env.newUser("capped");
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.reply = { text: "Streamed later.", usage: { input: 500, output: 250 } };

  const first = await openai.responses.create({ model: "gpt-4o", input: "a", background: true });
  const stream = await openai.responses.retrieve(first.id, { stream: true });
  const types: string[] = [];
  for await (const event of stream) types.push(event.type);
  assert.is(types.at(-1), "response.completed");
  assert.is((await env.usage(user, (u) => u.total_tokens === 750)).total_tokens, 750);

  const second = await openai.responses.create({ model: "gpt-4o", input: "b", background: true });
  assert.instance(await openai.responses.create({ model: "gpt-4o", input: "x" }).catch((e) => e), LimitExceededError, "held while queued");
  const cancelled = await openai.responses.cancel(second.id);
  assert.is(cancelled.status, "cancelled");
  // Given back: the next call runs, and it is the only event beside the first.
  mock.reply = DEFAULT_REPLY;
  await openai.responses.create({ model: "gpt-4o", input: "x" });
  await env.usage(user, (u) => u.total_tokens === 750 + 17);
  assert.equal(events.filter((e) => e.user_id === user).map((e) => e.input_tokens + e.output_tokens), [750, 17]);
});

t("a background response streamed and left before its end is held, and counted in full once read back", async ({ env, mock, events }) => {
  const user = await env.newUser("capped");
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.reply = { text: "A long report.", usage: { input: 2000, output: 500 }, hang: 2 };
  const stream = await openai.responses.create({ model: "gpt-4o", input: "write a report", background: true, stream: true });
  let id = "";
  for await (const event of stream) {
    if (event.type === "response.created") id = event.response.id;
    break;
  }
  assert.ok(id.startsWith("resp_bg_"));
  assert.instance(await openai.responses.create({ model: "gpt-4o", input: "x" }).catch((e) => e), LimitExceededError, "held while it runs on");

  mock.reply = { ...mock.reply, hang: undefined };
  const resumed = await openai.responses.retrieve(id, { stream: true, starting_after: 1 });
  for await (const _ of resumed);
  const usage = await env.usage(user, (u) => u.total_tokens === 2500);
  close(usage.total_cost, costOf("gpt-4o", 2000, 500));
  assert.is(events.filter((e) => e.user_id === user).length, 1);
});

t("helpers keep working and count once: withResponse, parse, chat and responses stream helpers", async ({ env, mock }) => {
  const user = await env.newUser();
  const plain = client(mock);
  const openai = meterOpenAI(plain, env.meter, { user_id: user });
  assert.is(openai, plain, "the same client object");
  mock.reply = { text: '{"answer":4}', usage: { input: 10, output: 6 } };

  const { data, response, request_id } = await openai.chat.completions.create({ model: "gpt-4o", messages: ask }).withResponse();
  assert.is(response.status, 200);
  assert.is(request_id, "req_mock");
  assert.is(data.choices[0]!.message.content, '{"answer":4}');

  const parsed = await openai.chat.completions.parse({ model: "gpt-4o", messages: ask, response_format: { type: "json_object" } });
  assert.is(parsed.choices[0]!.message.content, '{"answer":4}');

  const chatStream = openai.chat.completions.stream({ model: "gpt-4o", messages: ask });
  const final = await chatStream.finalChatCompletion();
  assert.is(final.choices[0]!.message.content, '{"answer":4}');
  assert.is(final.usage, undefined, "the helper's caller did not ask for usage");

  const responseStream = openai.responses.stream({ model: "gpt-4o", input: "2+2?" });
  assert.is((await responseStream.finalResponse()).output_text, '{"answer":4}');

  assert.is(mock.requests.length, 4);
  assert.is((await env.usage(user, (u) => u.total_tokens === 64)).total_tokens, 64, "four calls of 16 tokens");
});

t("retries happen below the wrapper: one event for a retried call; a refused call records nothing", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.failures = [500];
  await openai.chat.completions.create({ model: "gpt-4o", messages: ask });
  assert.is(mock.requests.length, 2);

  mock.failures = [400];
  const err = await openai.chat.completions.create({ model: "gpt-4o", messages: ask }).catch((e) => e);
  assert.instance(err, OpenAI.BadRequestError, "the SDK's own error class");
  assert.is((await env.usage(user, (u) => u.total_tokens === 17)).total_tokens, 17);
  assert.is(events.filter((e) => e.user_id === user).length, 1);
});

t("a hard gate rejects with LimitExceededError and sends nothing", async ({ env, mock }) => {
  const user = await env.newUser("closed");
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  const err = await openai.chat.completions.create({ model: "gpt-4o", messages: ask }).catch((e) => e);
  assert.instance(err, LimitExceededError);
  const streamErr = await openai.responses.create({ model: "gpt-4o", input: "x", stream: true }).catch((e) => e);
  assert.instance(streamErr, LimitExceededError);
  assert.is(mock.requests.length, 0);
});

t("a soft gate fires onSoftGate and the call is sent", async ({ env, mock }) => {
  // $2 spent, and the call's estimate holds about $8.20 of the $12 cap: 85%, past the 80% soft gate.
  const user = await env.newUser("capped");
  await env.meter.record(user, { model: "gpt-4o", output_tokens: 1000 });
  const soft: string[] = [];
  env.meter.onSoftGate((result, ctx) => void (ctx.user_id === user && soft.push(result.gate_reason!)));
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  await openai.chat.completions.create({ model: "gpt-4o", messages: ask });
  assert.equal(soft, ["total_spend"]);
  assert.is(mock.requests.length, 1);
});

t("the user comes from meter.withUser(); with no user at all nothing is sent", async ({ env, mock }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter);
  const err = await openai.chat.completions.create({ model: "gpt-4o", messages: ask }).catch((e) => e);
  assert.instance(err, MissingUserError);
  assert.is(mock.requests.length, 0);

  await env.meter.withUser(user, () => openai.chat.completions.create({ model: "gpt-4o", messages: ask }));
  assert.is((await env.usage(user, (u) => u.total_tokens === 17)).total_tokens, 17);
  assert.throws(() => meterOpenAI(openai, env.meter), /metered already/);
  assert.throws(() => meterOpenAI(client(mock), {} as never), /must be a Meter/);
  assert.throws(() => meterOpenAI(client(mock), env.meter, { user_id: "" }), /user_id must be a string/);
  assert.throws(() => meterOpenAI(client(mock), env.meter, { session_id: "s".repeat(256) }), /session_id must be a string of at most 255/);
  assert.throws(() => meterOpenAI(client(mock), env.meter, { metadata: { trace: 1n } }), /metadata must hold only JSON values/);
});

t("a call the caller aborts before the answer is metered with its estimate: the provider may be working on it", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.silent = true;
  const controller = new AbortController();
  const call = openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "Weather in Paris?" }] }, { signal: controller.signal });
  await eventually(async () => mock.requests.length === 1, 5_000, "the request reached the provider");
  controller.abort();
  await call.then(
    () => assert.unreachable("answered"),
    () => {},
  );
  await env.usage(user, (u) => u.total_tokens > 0);
  const recorded = events.filter((e) => e.user_id === user);
  assert.is(recorded.length, 1);
  assert.ok(recorded[0]!.input_tokens > 0 && recorded[0]!.output_tokens === 0, JSON.stringify(recorded[0]));
});

t("a stream the caller leaves (break, abort) is metered with its estimate", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.reply = { ...DEFAULT_REPLY, hang: true };

  const stream = await openai.chat.completions.create({ model: "gpt-4o", messages: ask, stream: true });
  for await (const _ of stream) break;

  const controller = new AbortController();
  const aborted = await openai.responses.create({ model: "gpt-4o", input: "weather?", stream: true }, { signal: controller.signal });
  const reading = (async () => {
    for await (const _ of aborted) controller.abort();
  })();
  await reading.catch(() => undefined);

  const mine = await eventually(() => {
    const list = events.filter((e) => e.user_id === user);
    return list.length === 2 ? list : undefined;
  });
  assert.ok(mine.every((e) => e.input_tokens > 0 && e.output_tokens === 0), "input estimated, no output seen");
  const estimated = mine[0]!.input_tokens + mine[1]!.input_tokens;
  assert.is((await env.usage(user, (u) => u.total_tokens === estimated)).total_tokens, estimated);
});

t("a raw response (.asResponse()) is metered from the body the caller reads: a JSON answer and a stream, each with the provider's usage", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.reply = { text: "Let me check.", tools: ["get_weather"], usage: { input: 1200, output: 300 } };
  const response = await openai.chat.completions.create({ model: "gpt-4o", messages: ask }).asResponse();
  assert.is(response.status, 200);
  assert.ok(response.url.endsWith("/v1/chat/completions"), "the provider's url");
  assert.is(response.headers.get("content-type"), "application/json");
  const body = await response.json();
  assert.is(body.usage.total_tokens, 1500, "the raw body is the caller's, as the provider sent it");

  mock.reply = { text: "Sunny and warm today", tools: ["get_weather", "lookup"], usage: { input: 800, output: 200 } };
  const raw = await openai.chat.completions.create({ model: "gpt-4o", messages: ask, stream: true }).asResponse();
  const text = await raw.text();
  assert.ok(text.includes('"choices":[]') && text.trimEnd().endsWith("data: [DONE]"), "the bytes pass untouched, the usage chunk the wrapper asked for included");

  const usage = await env.usage(user, (u) => u.total_tokens === 2500);
  assert.is(usage.tool_calls_count, 3, "tool calls read from the JSON answer and from the stream's deltas");
  close(usage.total_cost, costOf("gpt-4o", 2000, 500, ["get_weather", "get_weather", "lookup"]));
  assert.equal(
    events.filter((e) => e.user_id === user).map((e) => [e.input_tokens, e.output_tokens]),
    [
      [1200, 300],
      [800, 200],
    ],
  );
});

t("a raw stream read through its body's reader, then one cancelled part way: usage as read", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  mock.reply = { text: "Sunny and warm today", usage: { input: 800, output: 200 } };
  const whole = await openai.chat.completions.create({ model: "gpt-4o", messages: ask, stream: true }).asResponse();
  const reader = whole.body!.getReader();
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
  }
  await env.usage(user, (u) => u.total_tokens === 1000);

  mock.reply = { text: "Sunny and warm today", usage: { input: 800, output: 200 }, hang: 2 };
  const cut = await openai.chat.completions.create({ model: "gpt-4o", messages: ask, stream: true }).asResponse();
  const pieces = cut.body!.getReader();
  const first = await pieces.read();
  assert.ok(!first.done && new TextDecoder().decode(first.value).includes("data:"));
  await pieces.cancel();
  const mine = await eventually(async () => {
    const list = events.filter((e) => e.user_id === user);
    return list.length === 2 ? list : undefined;
  });
  assert.ok(mine[1]!.input_tokens > 0 && mine[1]!.input_tokens < 800, "cut before its usage: the input estimate");
  assert.ok(mine[1]!.output_tokens >= 1, "and the text it showed");
});

t("a stream dropped unread and a raw response never read are metered with their estimates once collected", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const openai = meterOpenAI(client(mock), env.meter, { user_id: user });
  const raw = async () => {
    const response = await openai.chat.completions.create({ model: "gpt-4o", messages: ask }).asResponse();
    assert.is(response.status, 200);
  };
  await raw();
  mock.reply = { ...DEFAULT_REPLY, hang: true };
  await (async () => void (await openai.chat.completions.create({ model: "gpt-4o", messages: ask, stream: true })))();
  const gc = runInNewContext("gc") as () => void;
  const mine = await eventually(async () => {
    gc();
    await new Promise((r) => setImmediate(r));
    const list = events.filter((e) => e.user_id === user);
    return list.length === 2 ? list : undefined;
  });
  assert.ok(mine.every((e) => e.output_tokens === 0 && e.input_tokens > 0));
});

t("calls still open when the meter shuts down (a stream, a background response) are recorded with what they showed, then delivered", async ({ env, mock }) => {
  const user = await env.newUser();
  const meter = new Meter({ apiKey: env.apiKey, baseURL: env.stack.apiUrl, flushIntervalMs: 600_000, logger: { warn: () => undefined } });
  await meter.start();
  const seen: UsageEvent[] = [];
  meter.onUsage((e) => void seen.push(e));
  const openai = meterOpenAI(client(mock), meter, { user_id: user });
  mock.reply = { ...DEFAULT_REPLY, hang: true };
  // Read one chunk and kept: neither ended, nor left, nor collectable.
  const stream = await openai.chat.completions.create({ model: "gpt-4o", messages: ask, stream: true });
  const iterator = stream[Symbol.asyncIterator]();
  await iterator.next();
  // A background response never read back.
  mock.reply = DEFAULT_REPLY;
  assert.is((await openai.responses.create({ model: "gpt-4o", input: "Research the weather in Paris", background: true })).status, "queued");
  assert.is(seen.length, 0);

  assert.ok(await meter.shutdown());
  assert.is(seen.length, 2);
  assert.ok(seen.every((e) => e.input_tokens > 0 && e.output_tokens === 0), "input estimated, no output seen");
  const total = seen[0]!.total_tokens + seen[1]!.total_tokens;
  assert.is((await env.usage(user, (u) => u.total_tokens === total)).total_tokens, total);
  stream.controller.abort();
});

t.run();
