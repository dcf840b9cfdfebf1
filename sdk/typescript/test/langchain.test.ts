import { ChatOpenAI } from "@langchain/openai";
import { FakeLLM } from "@langchain/core/utils/testing";
import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import { LimitExceededError } from "../src/index.ts";
import { MeterCallbackHandler, MissingUserError } from "../src/integrations/langchain.ts";
import { close, costOf, meteredSuite } from "./metered-stack.ts";
import { startMockOpenAI } from "./mock-openai.ts";
import { DEFAULT_REPLY, type MockServer } from "./mock-server.ts";

const t = meteredSuite("MeterCallbackHandler (LangChain)", startMockOpenAI);

const chat = (mock: MockServer) => new ChatOpenAI({ model: "gpt-4o-2024-08-06", apiKey: "sk-test", maxRetries: 0, configuration: { baseURL: `${mock.url}/v1` } });
const weather = { type: "function" as const, function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } } } } };

t("invoke: usage_metadata and the model's tool calls, priced exactly", async ({ env, mock, events }) => {
  const user = await env.newUser();
  mock.reply = { text: "", tools: ["get_weather"], usage: { input: 512, output: 64 } };
  const message = await chat(mock).bindTools([weather]).invoke("Weather in Paris?", { callbacks: [new MeterCallbackHandler(env.meter, { user_id: user })] });
  assert.is(message.tool_calls?.[0]?.name, "get_weather");

  const usage = await env.usage(user, (u) => u.total_tokens === 576);
  assert.equal(usage.tokens_by_model, { "gpt-4o": 576 });
  assert.is(usage.tool_calls_count, 1);
  close(usage.total_cost, costOf("gpt-4o", 512, 64, ["get_weather"]));
  assert.equal(events.find((e) => e.user_id === user)!.metadata, { provider: "openai" });
});

t("stream: the final usage of the streamed message, counted once", async ({ env, mock }) => {
  const user = await env.newUser();
  mock.reply = { text: "Sunny with a light breeze", usage: { input: 200, output: 40 } };
  const handler = new MeterCallbackHandler(env.meter);
  let text = "";
  await env.meter.withUser(user, async () => {
    for await (const chunk of await chat(mock).stream("Weather?", { callbacks: [handler] })) text += chunk.content;
  });
  assert.is(text, "Sunny with a light breeze");
  assert.is(mock.requests.length, 1);
  assert.is((await env.usage(user, (u) => u.total_tokens === 240)).total_tokens, 240);
});

t("a hard gate surfaces LimitExceededError from invoke() and stream() and sends nothing; so does a missing user", async ({ env, mock }) => {
  const closed = new MeterCallbackHandler(env.meter, { user_id: await env.newUser("closed") });
  assert.instance(await chat(mock).invoke("hi", { callbacks: [closed] }).catch((e) => e), LimitExceededError);
  assert.instance(await chat(mock).stream("hi", { callbacks: [closed] }).catch((e) => e), LimitExceededError);
  assert.instance(await chat(mock).invoke("hi", { callbacks: [new MeterCallbackHandler(env.meter)] }).catch((e) => e), MissingUserError);
  assert.is(mock.requests.length, 0);
});

t("a provider error gives the reservation back and records nothing", async ({ env, mock, events }) => {
  const user = await env.newUser();
  mock.failures = [400];
  const handler = new MeterCallbackHandler(env.meter, { user_id: user });
  assert.ok(await chat(mock).invoke("hi", { callbacks: [handler] }).catch((e) => e) instanceof Error);
  await chat(mock).invoke("hi", { callbacks: [handler] });
  assert.is((await env.usage(user, (u) => u.total_tokens === 17)).total_tokens, 17);
  assert.is(events.filter((e) => e.user_id === user).length, 1);
});

t("a stream left by break is metered once with what it streamed, and its reservation given back", async ({ env, mock, events }) => {
  // The capped plan holds about $8.20 for a call in flight: the next call is blocked until
  // the left stream is settled.
  const user = await env.newUser("capped");
  mock.reply = { ...DEFAULT_REPLY, hang: 3 };
  const handler = new MeterCallbackHandler(env.meter, { user_id: user, idleMs: 100 });
  let read = 0;
  for await (const _ of await chat(mock).stream("Weather?", { callbacks: [handler] })) if (++read === 2) break;

  const event = await eventually(() => events.find((e) => e.user_id === user));
  assert.is(event.input_tokens, Math.ceil(JSON.stringify(["Weather?"]).length / 4), "the input estimate");
  assert.equal(event.metadata, { provider: "openai" });
  assert.ok(event.output_tokens >= 1 && event.output_tokens <= Math.ceil(DEFAULT_REPLY.text.length / 4), `output from the text streamed: ${event.output_tokens}`);
  assert.is((await env.meter.guard(user, { model: "gpt-4o" })).status, "ok", "the reservation was given back");
  await env.usage(user, (u) => u.total_tokens === event.input_tokens + event.output_tokens);
  assert.is(events.filter((e) => e.user_id === user).length, 1);
});

t("a stream paused past idleMs is settled then; when it is read to its end after all, nothing counts twice", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const handler = new MeterCallbackHandler(env.meter, { user_id: user, idleMs: 100 });
  const stream = await chat(mock).stream("Weather?", { callbacks: [handler] });
  const iterator = stream[Symbol.asyncIterator]();
  await iterator.next();
  await iterator.next();
  const settled = await eventually(() => events.find((e) => e.user_id === user));
  while (!(await iterator.next()).done);
  // LangChain has now ended the run with the real usage; the handler had settled it already.
  await env.usage(user, (u) => u.total_tokens === settled.input_tokens + settled.output_tokens);
  assert.is(events.filter((e) => e.user_id === user).length, 1);
});

t("a stream aborted by its signal mid-way is metered once with its estimate", async ({ env, mock, events }) => {
  const user = await env.newUser();
  mock.reply = { ...DEFAULT_REPLY, hang: 2 };
  const controller = new AbortController();
  const handler = new MeterCallbackHandler(env.meter, { user_id: user });
  const err = await (async () => {
    for await (const _ of await chat(mock).stream("Weather?", { callbacks: [handler], signal: controller.signal })) controller.abort();
  })().catch((e) => e);
  assert.instance(err, Error);
  const event = await eventually(() => events.find((e) => e.user_id === user));
  assert.is(event.input_tokens, Math.ceil(JSON.stringify(["Weather?"]).length / 4));
  await env.usage(user, (u) => u.total_tokens === event.input_tokens + event.output_tokens);
  assert.is(events.filter((e) => e.user_id === user).length, 1);
});

t("a completion (non-chat) model's call is reserved and metered too", async ({ env, events }) => {
  const user = await env.newUser();
  const llm = new FakeLLM({ response: "x".repeat(400) });
  const out = await llm.invoke("Say a long thing about the weather in Paris", { callbacks: [new MeterCallbackHandler(env.meter, { user_id: user })] });
  assert.is(out.length, 400);
  // No usage from this model: the prompt's estimate and about a token per four characters of its answer.
  const usage = await env.usage(user, (u) => u.total_tokens > 100);
  assert.ok(usage.total_tokens >= 100 && usage.total_tokens < 130, String(usage.total_tokens));
  assert.is(events.filter((e) => e.user_id === user).length, 1);
});

t("idleMs is checked where the handler is made", async ({ env }) => {
  assert.throws(() => new MeterCallbackHandler(env.meter, { idleMs: 0 }), /idleMs must be an integer/);
  assert.throws(() => new MeterCallbackHandler(env.meter, { idleMs: 1.5 }), /idleMs must be an integer/);
  assert.throws(() => new MeterCallbackHandler(env.meter, { idleMs: 2 ** 31 }), /idleMs must be an integer/);
});

t.run();
