import Anthropic from "@anthropic-ai/sdk";
import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import { LimitExceededError } from "../src/index.ts";
import { meterAnthropic, MissingUserError } from "../src/integrations/anthropic.ts";
import { close, costOf, meteredSuite } from "./metered-stack.ts";
import { startMockAnthropic } from "./mock-anthropic.ts";
import type { MockServer } from "./mock-server.ts";

const t = meteredSuite("meterAnthropic", startMockAnthropic);

const MODEL = "claude-sonnet-4-6-20260115";
const client = (mock: MockServer) => new Anthropic({ apiKey: "sk-ant-test", baseURL: mock.url, maxRetries: 2 });
const params = { model: MODEL, max_tokens: 512, messages: [{ role: "user" as const, content: "What is the weather in Paris?" }] };
const TOOLS_REPLY = { text: "It is sunny.", tools: ["get_weather"], serverTools: ["web_search"], usage: { input: 900, output: 250, cacheRead: 64, cacheWrite: 32 } };
// Input as billed includes cache reads and writes.
const TOOLS_INPUT = 900 + 64 + 32;

t("a message records input with cache tokens, output and tool-use blocks; the service prices them", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const anthropic = meterAnthropic(client(mock), env.meter, { user_id: user });
  mock.reply = TOOLS_REPLY;
  const message = await anthropic.messages.create(params);
  assert.equal(message.content.map((b) => b.type), ["server_tool_use", "web_search_tool_result", "text", "tool_use"]);

  const usage = await env.usage(user, (u) => u.total_tokens === TOOLS_INPUT + 250);
  assert.equal(usage.tokens_by_model, { "claude-sonnet-4-6": TOOLS_INPUT + 250 });
  assert.is(usage.tool_calls_count, 2, "web_search counted by its block, not again by the usage counter");
  close(usage.total_cost, costOf("claude-sonnet-4-6", TOOLS_INPUT, 250, ["get_weather", "web_search"]));
  assert.equal(events.find((e) => e.user_id === user)!.metadata, { provider: "anthropic" });
});

t("raw streams, the messages.stream() helper and a raw body each count once, with the final cumulative usage", async ({ env, mock }) => {
  const user = await env.newUser();
  const anthropic = meterAnthropic(client(mock), env.meter, { user_id: user });
  mock.reply = TOOLS_REPLY;

  const raw = await anthropic.messages.create({ ...params, stream: true });
  const types: string[] = [];
  for await (const event of raw) types.push(event.type);
  assert.is(types.at(-1), "message_stop");

  const helper = anthropic.messages.stream(params);
  let text = "";
  helper.on("text", (delta) => (text += delta));
  const final = await helper.finalMessage();
  assert.is(text, "It is sunny.");
  assert.is(final.usage.output_tokens, 250);

  // A raw body (`.asResponse()`), piped on as a product forwarding the provider's events would.
  const response = await anthropic.messages.create({ ...params, stream: true }).asResponse();
  let forwarded = "";
  await response.body!.pipeThrough(new TextDecoderStream()).pipeTo(new WritableStream({ write: (s) => void (forwarded += s) }));
  assert.ok(forwarded.includes("event: message_stop"));

  assert.is(mock.requests.length, 3);
  const usage = await env.usage(user, (u) => u.total_tokens === 3 * (TOOLS_INPUT + 250));
  assert.is(usage.tool_calls_count, 6);
  close(usage.total_cost, 3 * costOf("claude-sonnet-4-6", TOOLS_INPUT, 250, ["get_weather", "web_search"]));
});

t("the same client: withResponse, parse and retries behave as without the wrapper; a refused call records nothing", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const plain = client(mock);
  const anthropic = meterAnthropic(plain, env.meter, { user_id: user });
  assert.is(anthropic, plain);
  mock.failures = [529];
  const { data, response } = await anthropic.messages.create(params).withResponse();
  assert.is(response.status, 200);
  assert.is(data.usage.input_tokens, 12);
  assert.is(mock.requests.length, 2, "retried once");
  const parsed = await anthropic.messages.parse(params);
  assert.is(parsed.usage.output_tokens, 5);

  mock.failures = [400];
  const err = await anthropic.messages.create(params).catch((e) => e);
  assert.instance(err, Anthropic.BadRequestError);
  assert.is((await env.usage(user, (u) => u.total_tokens === 34)).total_tokens, 34);
  assert.is(events.filter((e) => e.user_id === user).length, 2);
});

t("a hard gate blocks create() and stream() before any request; no user is an error too", async ({ env, mock }) => {
  const closed = meterAnthropic(client(mock), env.meter, { user_id: await env.newUser("closed") });
  assert.instance(await closed.messages.create(params).catch((e) => e), LimitExceededError);
  // The helper wraps every error that is not its own in an AnthropicError, the cause kept.
  const helperErr = await closed.messages.stream(params).finalMessage().catch((e) => e);
  assert.instance(helperErr, Anthropic.AnthropicError);
  assert.instance(helperErr.cause, LimitExceededError);
  const nobody = meterAnthropic(client(mock), env.meter);
  assert.instance(await nobody.messages.create(params).catch((e) => e), MissingUserError);
  assert.is(mock.requests.length, 0);
});

t("a stream left after its first event (break, or the helper's abort()) is metered with the usage reported so far", async ({ env, mock, events }) => {
  const user = await env.newUser();
  const anthropic = meterAnthropic(client(mock), env.meter, { user_id: user });
  mock.reply = { ...TOOLS_REPLY, hang: true };
  const stream = await anthropic.messages.create({ ...params, stream: true });
  for await (const event of stream) {
    assert.is(event.type, "message_start");
    break;
  }
  // The helper aborted after its first event: the same, through its own AbortController.
  const helper = anthropic.messages.stream(params);
  helper.on("streamEvent", () => helper.abort());
  await helper.done().catch(() => undefined);
  assert.ok(helper.aborted);

  const mine = await eventually(() => {
    const list = events.filter((e) => e.user_id === user);
    return list.length === 2 ? list : undefined;
  });
  // message_start reports the input and one output token.
  assert.ok(mine.every((e) => e.input_tokens === TOOLS_INPUT && e.output_tokens === 1));
  await env.usage(user, (u) => u.total_tokens === 2 * (TOOLS_INPUT + 1));
});

t.run();
