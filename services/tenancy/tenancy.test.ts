import { suite } from "uvu";
import * as assert from "uvu/assert";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, type Client } from "@connectrpc/connect";
import type { MongoClient } from "mongodb";
import {
  CreateProductRequestSchema,
  CreateProductResponseSchema,
  TenancyService,
} from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { rpcClient, serveRpc, type RpcServer } from "@meter/lib/rpc";
import { testMongoUrl } from "../../test/support/database.ts";
import { createTenancyService } from "./index.ts";
import { rpcCode } from "../../test/support/rpc.ts";

const t = suite<{ mongo: MongoClient; server: RpcServer; client: Client<typeof TenancyService>; dbName: string }>(
  "tenancy service over gRPC",
);

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.dbName = `tenancy_${Date.now()}`;
  const logger = createLogger("tenancy-test", "silent");
  const module = await createTenancyService({ db: ctx.mongo.db(ctx.dbName), logger });
  ctx.server = await serveRpc({ modules: [module], port: 0, logger });
  ctx.client = rpcClient(TenancyService, ctx.server.url);
});

t.after(async (ctx) => {
  await ctx.server.close();
  await ctx.mongo.close();
});

t("creates a product, authenticates its key and lists it", async ({ client }) => {
  const res = await client.createProduct({ name: "Acme", contactEmail: "ops@acme.test" });
  assert.ok(res.product);
  assert.is(res.product.name, "Acme");
  assert.is(res.product.slug, "acme");
  assert.is(res.product.contactEmail, "ops@acme.test");
  assert.is(res.product.contactName, undefined);
  const auth = await client.authenticate({ apiKey: res.apiKey });
  assert.is(auth.productId, res.product.id);
  const list = await client.listProducts({ productId: auth.productId });
  assert.equal(
    list.products.map((p) => p.id),
    [res.product.id],
  );
});

t("stores keys only as hashes", async ({ client, mongo, dbName }) => {
  const res = await client.createProduct({ name: "Hashed" });
  const docs = await mongo.db(dbName).collection("api_keys").find({ product_id: res.product!.id }).toArray();
  assert.is(docs.length, 1);
  assert.not.ok(JSON.stringify(docs).includes(res.apiKey), "plain key found in the database");
  assert.not.ok(JSON.stringify(docs).includes(res.apiKey.slice(10)), "key body found in the database");
});

t("derives unique slugs for equal names", async ({ client }) => {
  const [a, b, c] = await Promise.all([1, 2, 3].map(() => client.createProduct({ name: "Same Name" })));
  const slugs = new Set([a!.product!.slug, b!.product!.slug, c!.product!.slug]);
  assert.is(slugs.size, 3);
  for (const s of slugs) assert.match(s, /^same-name/);
});

t("rejects unknown and malformed keys as unauthenticated", async ({ client }) => {
  assert.is(await rpcCode(client.authenticate({ apiKey: "mk_" + "A".repeat(43) })), Code.Unauthenticated);
  assert.is(await rpcCode(client.authenticate({ apiKey: "nonsense" })), Code.Unauthenticated);
  assert.is(await rpcCode(client.authenticate({ apiKey: "" })), Code.Unauthenticated);
});

t("validates names and emails", async ({ client }) => {
  assert.is(await rpcCode(client.createProduct({ name: "" })), Code.InvalidArgument);
  assert.is(await rpcCode(client.createProduct({ name: "   " })), Code.InvalidArgument);
  assert.is(await rpcCode(client.createProduct({ name: "x".repeat(256) })), Code.InvalidArgument);
  assert.is(await rpcCode(client.createProduct({ name: "ok", contactEmail: "not-an-email" })), Code.InvalidArgument);
  const max = await client.createProduct({ name: "y".repeat(255) });
  assert.is(max.product!.name.length, 255);
});

t("lists nothing for an unknown product id", async ({ client }) => {
  const list = await client.listProducts({ productId: "00000000-0000-0000-0000-000000000000" });
  assert.equal(list.products, []);
});

t("speaks standard gRPC: a plain @grpc/grpc-js client can call it", async ({ server }) => {
  const client = new grpc.Client(new URL(server.url).host, grpc.credentials.createInsecure());
  try {
    const res = await new Promise<ReturnType<typeof fromBinary<typeof CreateProductResponseSchema>>>((resolve, reject) =>
      client.makeUnaryRequest(
        `/${TenancyService.typeName}/CreateProduct`,
        (m: ReturnType<typeof create<typeof CreateProductRequestSchema>>) =>
          Buffer.from(toBinary(CreateProductRequestSchema, m)),
        (b: Buffer) => fromBinary(CreateProductResponseSchema, b),
        create(CreateProductRequestSchema, { name: "Over plain gRPC" }),
        (err, value) => (err ? reject(err) : resolve(value!)),
      ),
    );
    assert.is(res.product?.name, "Over plain gRPC");
    assert.match(res.apiKey, /^mk_/);
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      client.makeUnaryRequest(
        `/${TenancyService.typeName}/CreateProduct`,
        (m: ReturnType<typeof create<typeof CreateProductRequestSchema>>) =>
          Buffer.from(toBinary(CreateProductRequestSchema, m)),
        (b: Buffer) => b,
        create(CreateProductRequestSchema, { name: "" }),
        (err) => resolve(err as grpc.StatusObject),
      );
    });
    assert.is(status.code, grpc.status.INVALID_ARGUMENT);
  } finally {
    client.close();
  }
});

t.run();
