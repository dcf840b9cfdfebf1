import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, streamText, tool } from "ai";
import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import { LimitExceededError } from "../src/index.ts";
import { meterModel, MissingUserError } from "../src/integrations/ai.ts";
import { close, costOf, meteredSuite } from "./metered-stack.ts";
import { startMockOpenAI } from "./mock-openai.ts";
import { DEFAULT_REPLY, type MockServer } from "./mock-server.ts";

const t = meteredSuite("meterModel (AI SDK)", startMockOpenAI);

const provider = (mock: MockServer) => createOpenAI({ apiKey: "sk-test", baseURL: `${mock.url}/v1` });
const tools = {
  get_weather: tool({ description: "Weather of a city", inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }) }),
};

t("generateText over the Responses API: usage, function and built-in tool calls, priced exactly", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const model = meterModel(provider(mock)("gpt-4o-2024-08-06"), env.meter, { user_id: user });
  mock.reply = { text: "Checking.", tools: ["get_weather"], serverTools: ["web_search"], usage: { input: 640, output: 128 } };
  const result = await generateText({ model, prompt: "Weather in Paris?", tools });
  assert.is(result.usage.inputTokens, 640);
  assert.is(mock.requests[0]!.path, "/v1/responses");

  const usage = await env.usage(user, (u) => u.total_tokens === 768);
  assert.equal(usage.tokens_by_model, { "gpt-4o": 768 });
  assert.is(usage.tool_calls_count, 2);
  close(usage.total_cost, costOf("gpt-4o", 640, 128, ["get_weather", "web_search"]));
  assert.equal(events.find((e) => e.user_id === user)!.metadata, { provider: "openai" });
});

t("streamText over chat completions: usage from the finish part, counted once", async ({ env, mock }) => {
  const user = await env.newUser();
  const model = meterModel(provider(mock).chat("gpt-4o"), env.meter, { user_id: user });
  mock.reply = { text: "It is sunny in Paris today", tools: ["get_weather"], usage: { input: 300, output: 60 } };
  const result = streamText({ model, prompt: "Weather in Paris?", tools });
  let text = "";
  for await (const delta of result.textStream) text += delta;
  assert.is(text, "It is sunny in Paris today");
  assert.is((await result.usage).outputTokens, 60);

  const usage = await env.usage(user, (u) => u.total_tokens === 360);
  assert.is(usage.tool_calls_count, 1);
  close(usage.total_cost, costOf("gpt-4o", 300, 60, ["get_weather"]));
});

t("a stream that ends without the provider's usage is metered with its estimate, not as 0 tokens", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const model = meterModel(provider(mock).chat("gpt-4o"), env.meter, { user_id: user });
  // 40 characters received: 10 output tokens at four characters a token.
  mock.reply = { text: "a".repeat(40), usage: { input: 300, output: 60 }, noUsageChunk: true };
  const result = streamText({ model, prompt: "Weather in Paris?" });
  for await (const _ of result.textStream);
  await env.usage(user, (u) => u.total_tokens > 0);
  const recorded = events.filter((e) => e.user_id === user);
  assert.is(recorded.length, 1);
  assert.is(recorded[0]!.output_tokens, 10);
  assert.ok(recorded[0]!.input_tokens > 0, "the input estimate");
});

t("a hard gate rejects generateText and errors streamText before any request", async ({ env, mock }) => {
  const model = meterModel(provider(mock)("gpt-4o"), env.meter, { user_id: await env.newUser("closed") });
  assert.instance(await generateText({ model, prompt: "hi" }).catch((e) => e), LimitExceededError);
  let streamError: unknown;
  const result = streamText({ model, prompt: "hi", onError: ({ error }) => void (streamError = error) });
  for await (const _ of result.textStream);
  assert.instance(streamError, LimitExceededError);
  assert.is(mock.requests.length, 0);
});

t("the user comes from meter.withUser(); without one the call fails before a request", async ({ env, mock }) => {
  const user = await env.newUser();
  const model = meterModel(provider(mock).chat("gpt-4o"), env.meter);
  const err = await generateText({ model, prompt: "hi" }).catch((e) => e);
  assert.ok(MissingUserError.prototype.isPrototypeOf(err) || err?.cause instanceof MissingUserError, String(err));
  assert.is(mock.requests.length, 0);
  await env.meter.withUser(user, () => generateText({ model, prompt: "hi" }));
  assert.is((await env.usage(user, (u) => u.total_tokens === 17)).total_tokens, 17);
});

t("a stream aborted by the caller is metered with its estimate; one left with break, with what the SDK read on", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const model = meterModel(provider(mock).chat("gpt-4o"), env.meter, { user_id: user });
  mock.reply = { ...DEFAULT_REPLY, hang: true };
  const controller = new AbortController();
  const result = streamText({ model, prompt: "Tell me a long story", abortSignal: controller.signal, onError: () => undefined });
  await eventually(() => mock.requests.length === 1);
  controller.abort();
  for await (const _ of result.fullStream);
  const aborted = await eventually(() => events.find((e) => e.user_id === user));
  assert.ok(aborted.input_tokens > 0, "the input estimate");

  // Leaving textStream does not stop the request: streamText reads the model's stream on for
  // its other outputs, so the call ends, with the provider's usage.
  mock.reply = DEFAULT_REPLY;
  for await (const _ of streamText({ model, prompt: "Tell me a long story" }).textStream) break;
  await eventually(() => events.filter((e) => e.user_id === user).length === 2);
  await env.usage(user, (u) => u.total_tokens === aborted.total_tokens + 17);
  assert.is(events.filter((e) => e.user_id === user).length, 2);
});

t.run();
