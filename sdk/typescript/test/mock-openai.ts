import type { ServerResponse } from "node:http";
import { pieces, sendEvents, sendJson, startMockServer, type MockServer, type ReceivedRequest, type Reply } from "./mock-server.ts";

/**
 * OpenAI's wire format for chat completions (JSON, and SSE chunks with the extra usage chunk
 * only when `stream_options.include_usage` is set) and the Responses API (JSON, and typed SSE
 * events ending with `response.completed`). Base URL for clients: `${url}/v1`.
 */
export function startMockOpenAI(): Promise<MockServer> {
  return startMockServer({ "/v1/chat/completions": chatCompletions, "/v1/responses": responses });
}

const CREATED = 1_763_900_000;

function chatUsage(reply: Reply) {
  const { input, output, cacheRead = 0 } = reply.usage;
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: cacheRead, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

function chatCompletions(req: ReceivedRequest, reply: Reply, res: ServerResponse): void {
  const model = reply.model ?? req.body.model;
  const toolCalls = (reply.tools ?? []).map((name, i) => ({ id: `call_${i}`, type: "function", function: { name, arguments: "{\"city\":\"Paris\"}" } }));
  const finish = toolCalls.length ? "tool_calls" : "stop";
  if (!req.body.stream) {
    sendJson(res, {
      id: "chatcmpl-mock",
      object: "chat.completion",
      created: CREATED,
      model,
      system_fingerprint: "fp_mock",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: reply.text, refusal: null, annotations: [], ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
          logprobs: null,
          finish_reason: finish,
        },
      ],
      usage: chatUsage(reply),
      service_tier: "default",
    });
    return;
  }
  const withUsage = req.body.stream_options?.include_usage === true;
  const chunk = (choices: unknown[], usage?: unknown) => ({
    data: {
      id: "chatcmpl-mock",
      object: "chat.completion.chunk",
      created: CREATED,
      model,
      system_fingerprint: "fp_mock",
      choices,
      ...(withUsage ? { usage: usage ?? null } : {}),
    },
  });
  const events: { data: unknown }[] = [chunk([{ index: 0, delta: { role: "assistant", content: "", refusal: null }, logprobs: null, finish_reason: null }])];
  for (const p of pieces(reply.text)) events.push(chunk([{ index: 0, delta: { content: p }, logprobs: null, finish_reason: null }]));
  toolCalls.forEach((call, index) => {
    events.push(chunk([{ index: 0, delta: { tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }, logprobs: null, finish_reason: null }]));
    events.push(chunk([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: call.function.arguments } }] }, logprobs: null, finish_reason: null }]));
  });
  events.push(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]));
  if (withUsage && !reply.noUsageChunk) events.push(chunk([], chatUsage(reply)));
  events.push({ data: "[DONE]" });
  sendEvents(res, events, reply.hang);
}

function responses(req: ReceivedRequest, reply: Reply, res: ServerResponse): void {
  const model = reply.model ?? req.body.model;
  const { input, output, cacheRead = 0 } = reply.usage;
  const items: any[] = [
    { id: "msg_mock", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: reply.text, annotations: [], logprobs: [] }] },
    ...(reply.serverTools ?? []).map((tool, i) => ({ id: `${tool}_${i}`, type: `${tool}_call`, status: "completed", action: { type: "search", query: "weather" } })),
    ...(reply.tools ?? []).map((name, i) => ({ id: `fc_${i}`, type: "function_call", status: "completed", call_id: `call_${i}`, name, arguments: "{\"city\":\"Paris\"}" })),
  ];
  const response = (status: string, withOutput: boolean) => ({
    id: "resp_mock",
    object: "response",
    created_at: CREATED,
    status,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model,
    output: withOutput ? items : [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: true,
    temperature: 1,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: 1,
    truncation: "disabled",
    usage: withOutput
      ? { input_tokens: input, input_tokens_details: { cached_tokens: cacheRead }, output_tokens: output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + output }
      : null,
    user: null,
    metadata: {},
  });
  if (!req.body.stream) {
    sendJson(res, response("completed", true));
    return;
  }
  let seq = 0;
  const ev = (type: string, data: Record<string, unknown>) => ({ event: type, data: { type, sequence_number: seq++, ...data } });
  const events = [ev("response.created", { response: response("in_progress", false) }), ev("response.in_progress", { response: response("in_progress", false) })];
  items.forEach((item, output_index) => {
    if (item.type === "message") {
      events.push(ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } }));
      events.push(ev("response.content_part.added", { item_id: item.id, output_index, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } }));
      for (const p of pieces(reply.text)) events.push(ev("response.output_text.delta", { item_id: item.id, output_index, content_index: 0, delta: p, logprobs: [] }));
      events.push(ev("response.output_text.done", { item_id: item.id, output_index, content_index: 0, text: reply.text, logprobs: [] }));
      events.push(ev("response.content_part.done", { item_id: item.id, output_index, content_index: 0, part: item.content[0] }));
    } else if (item.type === "function_call") {
      events.push(ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", arguments: "" } }));
      events.push(ev("response.function_call_arguments.delta", { item_id: item.id, output_index, delta: item.arguments }));
      events.push(ev("response.function_call_arguments.done", { item_id: item.id, output_index, name: item.name, arguments: item.arguments }));
    } else {
      events.push(ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress" } }));
    }
    events.push(ev("response.output_item.done", { output_index, item }));
  });
  events.push(ev("response.completed", { response: response("completed", true) }));
  sendEvents(res, events, reply.hang);
}
