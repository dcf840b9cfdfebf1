// The pure reading of usage and tool calls from each library's shapes.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { generateUsage, modelUsage, observeStreamPart } from "../src/integrations/ai-usage.ts";
import { messageUsage, observeMessageEvent } from "../src/integrations/anthropic-usage.ts";
import { llmResultUsage } from "../src/integrations/langchain-usage.ts";
import { estimateInput, newProgress, usageOfProgress } from "../src/integrations/metering.ts";
import { EventData } from "../src/integrations/raw-body.ts";
import { chatCompletionUsage, observeChatChunk, observeResponseEvent, responseItemTool, responseUsage } from "../src/integrations/openai-usage.ts";

const t = suite("integration usage shapes");

t("chat stream: a tool call is counted at its first piece only, usage from the last chunk", () => {
  const progress = newProgress();
  const seen = new Set<string>();
  const call = (index: number, name?: string, args = "") => ({ choices: [{ index: 0, delta: { tool_calls: [{ index, function: { name, arguments: args } }] } }] });
  for (const chunk of [call(0, "lookup"), call(0, undefined, '{"q":1}'), call(1, "lookup"), call(1, undefined, "{}")]) observeChatChunk(chunk, progress, seen);
  assert.equal(progress.tool_calls, ["lookup", "lookup"]);
  assert.is(progress.complete, false);
  observeChatChunk({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } }, progress, seen);
  assert.equal(usageOfProgress(progress, 999), { input_tokens: 7, output_tokens: 3, tool_calls: ["lookup", "lookup"] });
});

t("chat completion: every choice's function and custom tool calls", () => {
  const usage = chatCompletionUsage({
    choices: [
      { message: { tool_calls: [{ type: "function", function: { name: "a" } }] } },
      { message: { tool_calls: [{ type: "custom", custom: { name: "b" } }] } },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 4 },
  });
  assert.equal(usage, { input_tokens: 10, output_tokens: 4, tool_calls: ["a", "b"] });
});

t("responses: function, MCP and built-in calls are tools; messages, reasoning and outputs are not", () => {
  assert.is(responseItemTool({ type: "function_call", name: "f" }), "f");
  assert.is(responseItemTool({ type: "mcp_call", name: "m" }), "m");
  assert.is(responseItemTool({ type: "web_search_call" }), "web_search");
  assert.is(responseItemTool({ type: "code_interpreter_call" }), "code_interpreter");
  assert.is(responseItemTool({ type: "function_call_output" }), undefined);
  assert.is(responseItemTool({ type: "message" }), undefined);
  assert.is(responseItemTool({ type: "reasoning" }), undefined);
  const response = { output: [{ type: "web_search_call" }, { type: "message" }, { type: "function_call", name: "f" }], usage: { input_tokens: 5, output_tokens: 6 } };
  assert.equal(responseUsage(response), { input_tokens: 5, output_tokens: 6, tool_calls: ["web_search", "f"] });

  // In a stream the items seen as added are replaced by the terminal response's, not added to.
  const progress = newProgress();
  observeResponseEvent({ type: "response.output_item.added", item: { type: "function_call", name: "f" } }, progress);
  observeResponseEvent({ type: "response.output_text.delta", delta: "12345678" }, progress);
  assert.equal(usageOfProgress(progress, 3), { input_tokens: 3, output_tokens: 2, tool_calls: ["f"] });
  observeResponseEvent({ type: "response.completed", response }, progress);
  assert.equal(usageOfProgress(progress, 3), { input_tokens: 5, output_tokens: 6, tool_calls: ["web_search", "f"] });

  // The response a stream is for is named until its final event, with usage or without: a
  // background stream left before it is held for that response, one that saw it is not.
  const failed = newProgress();
  observeResponseEvent({ type: "response.created", response: { id: "resp_1", status: "queued" } }, failed);
  assert.is(failed.responseId, "resp_1");
  observeResponseEvent({ type: "response.failed", response: { id: "resp_1", status: "failed", usage: null } }, failed);
  assert.equal([failed.responseId, failed.complete], [undefined, false]);
});

t("anthropic: cache tokens are input; tool blocks are calls, the server-tool counter is not added", () => {
  const message = {
    content: [{ type: "server_tool_use", name: "web_search" }, { type: "web_search_tool_result" }, { type: "text" }, { type: "tool_use", name: "get_weather" }],
    usage: { input_tokens: 10, cache_read_input_tokens: 5, cache_creation_input_tokens: 2, output_tokens: 8, server_tool_use: { web_search_requests: 1 } },
  };
  assert.equal(messageUsage(message), { input_tokens: 17, output_tokens: 8, tool_calls: ["web_search", "get_weather"] });

  const progress = newProgress();
  const fields = {};
  observeMessageEvent({ type: "message_start", message: { usage: { input_tokens: 10, cache_read_input_tokens: 5, output_tokens: 1 } } }, progress, fields);
  observeMessageEvent({ type: "content_block_start", content_block: { type: "tool_use", name: "get_weather" } }, progress, fields);
  observeMessageEvent({ type: "message_delta", usage: { output_tokens: 40, input_tokens: null } }, progress, fields);
  // Cut here: the numbers reported so far stand.
  assert.equal(usageOfProgress(progress, 999), { input_tokens: 15, output_tokens: 40, tool_calls: ["get_weather"] });
  observeMessageEvent({ type: "message_stop" }, progress, fields);
  assert.is(progress.complete, true);
});

t("ai sdk: nested (v3/v4) and flat (v2) usage; tool-call parts, provider-executed included", () => {
  assert.equal(modelUsage({ inputTokens: { total: 9, noCache: 9 }, outputTokens: { total: 4 } }), { input_tokens: 9, output_tokens: 4 });
  assert.equal(modelUsage({ inputTokens: 9, outputTokens: 4 }), { input_tokens: 9, output_tokens: 4 });
  const result = { content: [{ type: "text" }, { type: "tool-call", toolName: "a" }, { type: "tool-call", toolName: "web_search", providerExecuted: true }, { type: "tool-result", toolName: "web_search" }], usage: { inputTokens: 3, outputTokens: 2 } };
  assert.equal(generateUsage(result), { input_tokens: 3, output_tokens: 2, tool_calls: ["a", "web_search"] });
  const progress = newProgress();
  observeStreamPart({ type: "text-delta", delta: "abcdefgh" }, progress);
  observeStreamPart({ type: "tool-call", toolName: "a" }, progress);
  assert.equal(usageOfProgress(progress, 6), { input_tokens: 6, output_tokens: 2, tool_calls: ["a"] });
  observeStreamPart({ type: "finish", usage: { inputTokens: { total: 30 }, outputTokens: { total: 12 } } }, progress);
  assert.equal(usageOfProgress(progress, 6), { input_tokens: 30, output_tokens: 12, tool_calls: ["a"] });
});

t("langchain: usage_metadata of every generation, else llmOutput.tokenUsage, else nothing", () => {
  const message = { usage_metadata: { input_tokens: 11, output_tokens: 6 }, tool_calls: [{ name: "a" }], content: [{ type: "server_tool_use", name: "web_search" }] };
  assert.equal(llmResultUsage({ generations: [[{ message }]] }), { input_tokens: 11, output_tokens: 6, tool_calls: ["a", "web_search"] });
  assert.equal(llmResultUsage({ generations: [[{ text: "x" }]], llmOutput: { tokenUsage: { promptTokens: 2, completionTokens: 1 } } }), { input_tokens: 2, output_tokens: 1, tool_calls: [] });
  assert.is(llmResultUsage({ generations: [[{ text: "x" }]] }), undefined);
  // n = 2: each candidate's message carries the whole answer's usage (@langchain/openai), counted once;
  // candidates with usage of their own, and separate prompts, add up.
  const usage = (input_tokens: number, output_tokens: number) => ({ message: { usage_metadata: { input_tokens, output_tokens } } });
  assert.equal(llmResultUsage({ generations: [[usage(11, 6), usage(11, 6)]] }), { input_tokens: 11, output_tokens: 6, tool_calls: [] });
  assert.equal(llmResultUsage({ generations: [[usage(11, 6), usage(0, 4)]] }), { input_tokens: 11, output_tokens: 10, tool_calls: [] });
  assert.equal(llmResultUsage({ generations: [[usage(11, 6)], [usage(11, 6)]] }), { input_tokens: 22, output_tokens: 12, tool_calls: [] });
});

t("estimate: the core's four characters a token over the parts present", () => {
  assert.is(estimateInput("abcd"), 1);
  assert.is(estimateInput("abcde"), 2);
  assert.is(estimateInput(undefined, null), 0);
  const messages = [{ role: "user", content: "hi" }];
  assert.is(estimateInput(undefined, messages), Math.ceil(JSON.stringify(messages).length / 4));
});

t("a raw body's server-sent events: the same data however the bytes are cut", () => {
  const wire =
    'data: {"a":1}\n\n' +
    ": keep-alive comment\n\n" +
    'event: message_delta\r\ndata: {"b":\r\ndata: 2}\r\n\r\n' +
    'data:{"c":"é"}\r\r' +
    "event: ping\n\n" +
    "data: not json\n\n" +
    "data: [DONE]\n\n" +
    'data: {"unfinished":true}';
  const bytes = new TextEncoder().encode(wire);
  for (const size of [1, 2, 3, 7, bytes.length]) {
    const events = new EventData();
    const out: unknown[] = [];
    for (let i = 0; i < bytes.length; i += size) out.push(...events.push(bytes.subarray(i, i + size)));
    assert.equal(out, [{ a: 1 }, { b: 2 }, { c: "é" }], `cut every ${size} bytes`);
  }
});

t.run();
