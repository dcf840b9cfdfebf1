import type { ServerResponse } from "node:http";
import { pieces, sendEvents, sendJson, startMockServer, type MockServer, type ReceivedRequest, type Reply } from "./mock-server.ts";

/**
 * OpenAI's wire format for chat completions (JSON, and SSE chunks with the extra usage chunk
 * only when `stream_options.include_usage` is set) and the Responses API (JSON, and typed SSE
 * events ending with `response.completed`). A response created with `background: true` answers
 * `queued` without usage under an id of its own; reading it back (GET, plain or `?stream=true`)
 * finds it completed with the reply's usage, or still `in_progress` while the reply is
 * `running`; a cancel answers it `cancelled`, without usage. Base URL for clients: `${url}/v1`.
 */
export function startMockOpenAI(): Promise<MockServer> {
  const background = new Map<string, { model: string }>();
  return startMockServer({
    "/v1/chat/completions": chatCompletions,
    "/v1/responses": (req, reply, res) => responses(req, reply, res, background),
    "/v1/responses/*": (req, reply, res) => readBackground(req, reply, res, background),
    "/v1/responses/*/cancel": (req, reply, res) => cancelBackground(req, reply, res, background),
  });
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

type Background = Map<string, { model: string }>;

function responses(req: ReceivedRequest, reply: Reply, res: ServerResponse, background: Background): void {
  const model = reply.model ?? req.body.model;
  if (req.body.background === true && !req.body.stream) {
    const id = `resp_bg_${background.size + 1}`;
    background.set(id, { model });
    sendJson(res, responseOf(reply, model, "queued", false, id, true));
    return;
  }
  if (!req.body.stream) {
    sendJson(res, responseOf(reply, model, "completed", true));
    return;
  }
  if (req.body.background !== true) {
    sendEvents(res, responseEvents(reply, model, "resp_mock", false), reply.hang);
    return;
  }
  // A background stream: the response goes on, and can be read back, if the stream is left.
  const id = `resp_bg_${background.size + 1}`;
  background.set(id, { model });
  sendEvents(res, responseEvents(reply, model, id, true), reply.hang);
}

/** GET /v1/responses/{id}: a background response as it is now, plain or as its stream of events. */
function readBackground(req: ReceivedRequest, reply: Reply, res: ServerResponse, background: Background): void {
  const id = req.path.split("/")[3]!;
  const known = background.get(id);
  if (req.method !== "GET" || !known) {
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no response ${id}` } }));
    return;
  }
  if (req.query.get("stream") === "true") sendEvents(res, responseEvents(reply, known.model, id, true), reply.hang);
  else sendJson(res, reply.running ? responseOf(reply, known.model, "in_progress", false, id, true) : responseOf(reply, known.model, "completed", true, id, true));
}

/** POST /v1/responses/{id}/cancel. */
function cancelBackground(req: ReceivedRequest, reply: Reply, res: ServerResponse, background: Background): void {
  const id = req.path.split("/")[3]!;
  const known = background.get(id);
  if (!known) {
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no response ${id}` } }));
    return;
  }
  sendJson(res, responseOf(reply, known.model, "cancelled", false, id, true));
}

function outputItems(reply: Reply): any[] {
  return [
    { id: "msg_mock", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: reply.text, annotations: [], logprobs: [] }] },
    ...(reply.serverTools ?? []).map((tool, i) => ({ id: `${tool}_${i}`, type: `${tool}_call`, status: "completed", action: { type: "search", query: "weather" } })),
    ...(reply.tools ?? []).map((name, i) => ({ id: `fc_${i}`, type: "function_call", status: "completed", call_id: `call_${i}`, name, arguments: "{\"city\":\"Paris\"}" })),
  ];
}

/** A Responses API response object: with its output and usage once `withOutput`. */
function responseOf(reply: Reply, model: string, status: string, withOutput: boolean, id = "resp_mock", background = false) {
  const { input, output, cacheRead = 0 } = reply.usage;
  return {
    id,
    background,
    object: "response",
    created_at: CREATED,
    status,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model,
    output: withOutput ? outputItems(reply) : [],
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
  };
}

/** The events of a streamed response, ending with `response.completed`. */
function responseEvents(reply: Reply, model: string, id: string, background: boolean) {
  const response = (status: string, withOutput: boolean) => responseOf(reply, model, status, withOutput, id, background);
  const items = outputItems(reply);
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
  return events;
}
