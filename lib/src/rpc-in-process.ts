import { create, fromBinary, isMessage, toBinary, type DescMethod, type DescMethodUnary, type DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createServiceImplSpec,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";

/** What a call served in-process shares with a call over the port. */
export interface InProcessOptions {
  /** Base URL of the port serving the same modules (names the call, as over the network). */
  baseUrl: string;
  /** The server's interceptors (request id context, metrics, error log). */
  serverInterceptors: Interceptor[];
  /** The client's interceptors (request id propagation). */
  clientInterceptors: Interceptor[];
  /** Largest message either way, as the port's server and the clients enforce. */
  maxBytes: number;
  /** Deadline of a call that names none (the clients' default). */
  defaultTimeoutMs: number;
}

/** Unary implementations as `routes` registers them, by method. */
function unaryImplementations(routes: (router: ConnectRouter) => void): Map<DescMethod, MethodImplSpec> {
  const specs = new Map<DescMethod, MethodImplSpec>();
  const router: ConnectRouter = {
    handlers: [],
    service(service, implementation) {
      for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) specs.set(spec.method, spec);
      return router;
    },
    rpc() {
      throw new Error("in-process routes register whole services");
    },
  };
  routes(router);
  return specs;
}

/** The signal of a call whose caller gave none: nothing cancels it but its deadline. */
const UNCANCELLED = new AbortController().signal;

/** Settled on completion: the handler's signal says the call is over, as Connect's does. */
const COMPLETED = new ConnectError("the call completed", Code.Canceled);

function sized(method: DescMethod, bytes: Uint8Array, max: number): Uint8Array {
  if (bytes.byteLength > max) {
    throw new ConnectError(`${method.name}: message size ${bytes.byteLength} is larger than configured readMaxBytes ${max}`, Code.ResourceExhausted);
  }
  return bytes;
}

/** A fresh error for the caller, as one decoded from the wire: nothing shared with the handler. */
function asReceived(err: unknown): ConnectError {
  const ce = ConnectError.from(err);
  const received = new ConnectError(ce.rawMessage, ce.code, new Headers(ce.metadata));
  received.details.push(...ce.details);
  return received;
}

const chain = (interceptors: Interceptor[], last: (req: UnaryRequest) => Promise<UnaryResponse>) =>
  [...interceptors].reverse().reduce((next, i) => i(next as never) as never, last);

/**
 * The request as the handler gets it. A caller that passed fields (a Connect client's usual
 * `client.method({...})`) has its message built from them by `create()` for this call alone,
 * and gives it up by sending it: the handler gets that message itself. Encoding and decoding
 * it again cost a batch of 1,000 usage events 2.4 ms on the path every batch waits on, twice
 * (the gateway's call and the analytics handover), for about 4% of the ingestion rate
 * (docs/benchmarks.md, "Ingestion"). A message the caller built itself and passed as such may
 * be one it keeps: that one is encoded and decoded, so the handler gets a copy, as over gRPC.
 */
function handedOver(method: DescMethodUnary, message: UnaryRequest["message"], built: boolean, max: number): UnaryRequest["message"] {
  return built ? message : fromBinary(method.input, sized(method, toBinary(method.input, message), max));
}

/**
 * A Transport to the modules of this process for unary calls: the call crosses the same
 * boundary as over gRPC (the answer encoded and decoded as protobuf, so the caller never holds
 * the handler's objects, a cache's among them; the request as handedOver() says; size limits,
 * the client's and the server's interceptors, deadlines, errors reduced to code, message and
 * metadata) without Connect's router transport, which emulates an HTTP exchange per call
 * (headers, envelopes, async iterables, a serializer lookup) and aborts two AbortControllers
 * without a reason on every call: each such abort builds a DOMException with a stack trace, and
 * the garbage kept the scavenges of a busy all-in-one process at 5-13 ms. Streaming calls,
 * which no service of this project has, go over the port.
 */
export function inProcessTransport(routes: (router: ConnectRouter) => void, opts: InProcessOptions, network: Transport): Transport {
  const specs = unaryImplementations(routes);

  async function serve(method: DescMethodUnary, spec: MethodImplSpec | undefined, req: UnaryRequest, timeoutMs: number | undefined, built: boolean): Promise<UnaryResponse> {
    const message = handedOver(method, req.message, built, opts.maxBytes);
    if (!spec || spec.kind !== "unary") throw new ConnectError(`${method.parent.typeName}.${method.name} is not implemented`, Code.Unimplemented);
    const controller = new AbortController();
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    const context: HandlerContext = {
      service: method.parent,
      method,
      signal: controller.signal,
      timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
      requestMethod: "POST",
      url: req.url,
      protocolName: "in-process",
      requestHeader: new Headers(req.header),
      responseHeader: new Headers(),
      responseTrailer: new Headers(),
      values: createContextValues(),
    };
    const handle = chain(opts.serverInterceptors, async (sreq) => ({
      stream: false,
      service: method.parent,
      method,
      header: context.responseHeader,
      trailer: context.responseTrailer,
      message: create(method.output, await spec.impl(sreq.message, context)),
    }));
    const call = handle({
      stream: false,
      service: method.parent,
      method,
      requestMethod: "POST",
      url: req.url,
      header: context.requestHeader,
      contextValues: context.values,
      signal: context.signal,
      message,
    });
    let timer: NodeJS.Timeout | undefined;
    let onCancel: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      const stop = (err: ConnectError) => {
        controller.abort(err);
        reject(err);
      };
      if (deadline !== undefined) timer = setTimeout(() => stop(new ConnectError("the operation timed out", Code.DeadlineExceeded)), timeoutMs);
      if (req.signal === UNCANCELLED) return;
      if (req.signal.aborted) return stop(ConnectError.from(req.signal.reason, Code.Canceled));
      onCancel = () => stop(ConnectError.from(req.signal.reason, Code.Canceled));
      req.signal.addEventListener("abort", onCancel, { once: true });
    });
    // Whichever loses the race settles unobserved; the handler's own failure is logged by the interceptor.
    stopped.catch(() => {});
    call.catch(() => {});
    try {
      const res = await Promise.race([call, stopped]);
      const answer = sized(method, toBinary(method.output, res.message), opts.maxBytes);
      return { ...res, header: new Headers(res.header), trailer: new Headers(res.trailer), message: fromBinary(method.output, answer) };
    } catch (err) {
      throw asReceived(err);
    } finally {
      clearTimeout(timer);
      if (onCancel) req.signal.removeEventListener("abort", onCancel);
      if (!controller.signal.aborted) controller.abort(COMPLETED);
    }
  }

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const timeout = timeoutMs === undefined ? opts.defaultTimeoutMs : timeoutMs <= 0 ? undefined : timeoutMs;
      const spec = specs.get(method);
      const message = create(method.input, input);
      // Built here from the caller's fields, unless the caller passed a message (create() returns it as it is).
      const built = !isMessage(input, method.input);
      const call = chain(opts.clientInterceptors, (req) => serve(method, spec, req, timeout, built && req.message === message));
      return (await call({
        stream: false,
        service: method.parent as DescService,
        method,
        requestMethod: "POST",
        url: `${opts.baseUrl}/${method.parent.typeName}/${method.name}`,
        header: new Headers(header),
        contextValues: contextValues ?? createContextValues(),
        signal: signal ?? UNCANCELLED,
        message,
      })) as never;
    },
    stream: (...args) => network.stream(...args),
  };
}
