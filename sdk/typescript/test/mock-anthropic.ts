import type { ServerResponse } from "node:http";
import { pieces, sendEvents, sendJson, startMockServer, type MockServer, type ReceivedRequest, type Reply } from "./mock-server.ts";

/**
 * Anthropic's wire format for messages: JSON, and the SSE sequence message_start,
 * content_block_start/delta/stop (text, tool_use, server_tool_use), message_delta (with the
 * cumulative output tokens) and message_stop. Base URL for clients: `url`.
 */
export function startMockAnthropic(): Promise<MockServer> {
  return startMockServer({ "/v1/messages": messages });
}

function blocks(reply: Reply): any[] {
  return [
    ...(reply.serverTools ?? []).flatMap((name, i) => [
      { type: "server_tool_use", id: `srvtoolu_${i}`, name, input: { query: "weather in Paris" } },
      { type: `${name}_tool_result`, tool_use_id: `srvtoolu_${i}`, content: [] },
    ]),
    { type: "text", text: reply.text, citations: null },
    ...(reply.tools ?? []).map((name, i) => ({ type: "tool_use", id: `toolu_${i}`, name, input: { city: "Paris" } })),
  ];
}

function messages(req: ReceivedRequest, reply: Reply, res: ServerResponse): void {
  const model = reply.model ?? req.body.model;
  const { input, output, cacheRead = 0, cacheWrite = 0 } = reply.usage;
  const content = blocks(reply);
  const serverToolUse = reply.serverTools?.length ? { web_search_requests: reply.serverTools.length, web_fetch_requests: 0 } : null;
  const stopReason = reply.tools?.length ? "tool_use" : "end_turn";
  const usage = {
    input_tokens: input,
    output_tokens: output,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cacheRead,
    server_tool_use: serverToolUse,
    service_tier: "standard",
  };
  const message = { id: "msg_mock", type: "message", role: "assistant", model, content, stop_reason: stopReason, stop_sequence: null, usage };
  if (!req.body.stream) {
    sendJson(res, message);
    return;
  }
  const ev = (type: string, data: Record<string, unknown>) => ({ event: type, data: { type, ...data } });
  const events = [
    ev("message_start", {
      message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1, server_tool_use: null } },
    }),
  ];
  content.forEach((block, index) => {
    if (block.type === "text") {
      events.push(ev("content_block_start", { index, content_block: { type: "text", text: "", citations: null } }));
      for (const p of pieces(block.text)) events.push(ev("content_block_delta", { index, delta: { type: "text_delta", text: p } }));
    } else if (block.type === "tool_use" || block.type === "server_tool_use") {
      events.push(ev("content_block_start", { index, content_block: { ...block, input: {} } }));
      events.push(ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } }));
    } else {
      events.push(ev("content_block_start", { index, content_block: block }));
    }
    events.push(ev("content_block_stop", { index }));
  });
  events.push(
    ev("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: output, input_tokens: input, cache_creation_input_tokens: cacheWrite, cache_read_input_tokens: cacheRead, server_tool_use: serverToolUse },
    }),
  );
  events.push(ev("message_stop", {}));
  sendEvents(res, events, reply.hang);
}
