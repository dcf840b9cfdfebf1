// Every RPC of every service, as the proto descriptors list them, refuses a request without a
// product over real gRPC, except the few on UNSCOPED_RPCS (whose batch items are checked each).
import { readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { create, type DescFile, type DescService } from "@bufbuild/protobuf";
import { createClient, type UnaryRequest } from "@connectrpc/connect";
import { CreateProductRequestSchema } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { Code, ConnectError } from "./errors.ts";
import { UNSCOPED_RPCS, requireProduct } from "./product-scope.ts";
import { grpcTransport } from "./rpc.ts";
import { startTestStack } from "../../test/support/stack.ts";

const GEN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../proto/gen/meter");

/** Every service the project defines, from the generated descriptors (so a new one is not missed). */
async function projectServices(): Promise<DescService[]> {
  const files = (await readdir(GEN, { recursive: true })).filter((f) => f.endsWith("_pb.ts"));
  const services: DescService[] = [];
  for (const f of files) {
    const mod = (await import(pathToFileURL(path.join(GEN, f)).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      if (name.startsWith("file_")) services.push(...(value as DescFile).services);
    }
  }
  return services;
}

async function failure(p: Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

test("every RPC refuses a request that names no product", async () => {
  const services = await projectServices();
  assert.equal(services.map((s) => s.typeName).sort(), [
    "meter.analytics.v1.AnalyticsService",
    "meter.ingestion.v1.IngestionService",
    "meter.plans.v1.PlansService",
    "meter.tenancy.v1.TenancyService",
    "meter.webhooks.v1.WebhooksService",
  ]);
  const stack = await startTestStack();
  try {
    const transport = grpcTransport(stack.rpcUrl);
    const listed = new Set<string>();
    let checked = 0;
    for (const service of services) {
      const client = createClient(service, transport) as unknown as Record<string, (req: unknown) => Promise<unknown>>;
      for (const method of service.methods) {
        assert.is(method.methodKind, "unary", `${method.name} is unary`);
        const rpc = `${service.typeName}/${method.name}`;
        const itemFields = UNSCOPED_RPCS[rpc];
        if (rpc in UNSCOPED_RPCS) listed.add(rpc);
        if (itemFields === null) continue;
        // A batch is refused when one of its items names no product; any other request when it names none.
        const requests = itemFields
          ? itemFields.map((field) => create(method.input, { [field]: [{}] } as never))
          : [create(method.input)];
        for (const request of requests) {
          const err = await failure(client[method.localName]!(request));
          assert.ok(err, `${rpc} answered a request without a product`);
          assert.is(err.code, Code.InvalidArgument, `${rpc}: ${err.rawMessage}`);
          if (itemFields) assert.match(err.rawMessage, /product_id is required/, rpc);
          else assert.is(err.rawMessage, "product_id is required", rpc);
        }
        checked++;
      }
    }
    // The allow-list names only RPCs that exist, and stays short.
    assert.equal([...listed].sort(), Object.keys(UNSCOPED_RPCS).sort());
    const all = services.reduce((n, s) => n + s.methods.length, 0);
    const unscoped = Object.values(UNSCOPED_RPCS).filter((v) => v === null).length;
    assert.is(checked, all - unscoped, "every other RPC was called");
  } finally {
    await stack.close();
  }
});

test("a new RPC whose request has no product_id field is refused until it is listed", async () => {
  let reached = false;
  const call = requireProduct(async () => {
    reached = true;
    return {} as never;
  });
  // CreateProductRequest carries no product_id; under another method name it is not on the list.
  const req = {
    stream: false,
    service: { typeName: "meter.tenancy.v1.TenancyService" },
    method: { name: "SomethingNew", input: CreateProductRequestSchema },
    message: create(CreateProductRequestSchema, { name: "x" }),
  } as unknown as UnaryRequest;
  const err = await failure(call(req));
  assert.is(err?.code, Code.InvalidArgument);
  assert.is(err?.rawMessage, "product_id is required");
  assert.not.ok(reached, "the handler was not called");
  await call({ ...req, method: { name: "CreateProduct", input: CreateProductRequestSchema } } as unknown as UnaryRequest);
  assert.ok(reached, "the listed RPC passes");
});

test.run();
