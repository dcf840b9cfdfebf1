import type { CallOptions } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { REQUEST_ID_HEADER } from "@meter/lib/context";

/** Options for every RPC made on behalf of an HTTP request: its request id travels along. */
export function rpcOptions(request: FastifyRequest): CallOptions {
  return { headers: { [REQUEST_ID_HEADER]: request.id } };
}
