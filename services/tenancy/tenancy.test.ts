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
import { rpcClient, serveRpc, type RpcServer } from "@meter/lib/rpc";
import { createTenancyService } from "./index.ts";
import { rpcCode, rpcFailure, withServedModule } from "../../test/support/rpc.ts";
import { eventually } from "../../test/support/eventually.ts";
import { generateApiKey, hashApiKey } from "./domain/keys.ts";

const t = suite<{ mongo: MongoClient; server: RpcServer; client: Client<typeof TenancyService>; dbName: string }>(
  "tenancy service over gRPC",
);

withServedModule(t, TenancyService, "tenancy", (db, logger) => createTenancyService({ db, logger }));

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

t("a key stored before keys had names becomes the admin key 'default' and keeps working", async ({ mongo, dbName, client }) => {
  const { product } = await client.createProduct({ name: "Old product" });
  const legacy = generateApiKey();
  // As the store wrote keys before: hash, product, prefix and creation time only.
  await mongo.db(dbName).collection("api_keys").insertOne({
    _id: hashApiKey(legacy) as never,
    product_id: product!.id,
    display_prefix: legacy.slice(0, 10),
    created_at: new Date(Date.now() - 60_000),
  });
  // A restart (here: a second module on the same database) names it.
  const logger = createLogger("tenancy-test", "silent");
  const module = await createTenancyService({ db: mongo.db(dbName), logger });
  const server = await serveRpc({ modules: [module], port: 0, logger });
  try {
    const upgraded = rpcClient(TenancyService, server.url);
    const auth = await upgraded.authenticate({ apiKey: legacy });
    assert.is(auth.productId, product!.id);
    assert.is(auth.scope, "admin");
    const keys = (await upgraded.listApiKeys({ productId: product!.id })).keys;
    const old = keys.find((k) => k.id === auth.keyId);
    assert.is(old?.name, "default");
    assert.is(old?.prefix, legacy.slice(0, 10));
  } finally {
    await server.close();
  }
});

t("two revocations racing for a product's last two admin keys: one wins, the other is refused", async ({ client }) => {
  const res = await client.createProduct({ name: "Racing" });
  const productId = res.product!.id;
  await client.createApiKey({ productId, name: "second", scope: "admin" });
  const keys = (await client.listApiKeys({ productId })).keys;
  assert.is(keys.length, 2);
  const codes = await Promise.all(keys.map((k) => rpcCode(client.revokeApiKey({ productId, keyId: k.id }))));
  assert.equal(codes.sort(), [undefined, Code.Aborted].sort(), `codes ${codes.map(String)}`);
  assert.is((await client.listApiKeys({ productId })).keys.length, 1);
});

t("a revoked key and an expired key are unauthenticated, the latter saying so", async ({ client }) => {
  const { product } = await client.createProduct({ name: "Expiring" });
  const productId = product!.id;
  const soon = await client.createApiKey({ productId, name: "soon", scope: "ingest", expiresAt: { seconds: BigInt(Math.floor(Date.now() / 1000) + 2), nanos: 0 } as never });
  assert.is((await client.authenticate({ apiKey: soon.apiKey })).scope, "ingest");
  const err = await eventually(() => rpcFailure(client.authenticate({ apiKey: soon.apiKey })), 15_000, "the key's expiry");
  assert.is(err.code, Code.Unauthenticated);
  assert.match(err.rawMessage, /expired/);
  const other = await client.createApiKey({ productId, name: "gone", scope: "ingest" });
  await client.revokeApiKey({ productId, keyId: other.key!.id });
  assert.is(await rpcCode(client.authenticate({ apiKey: other.apiKey })), Code.Unauthenticated);
  assert.is(await rpcCode(client.revokeApiKey({ productId: "00000000-0000-0000-0000-000000000000", keyId: other.key!.id })), Code.NotFound);
});

t("last_used_at is recorded on use, and not rewritten by every authentication", async ({ client, mongo, dbName }) => {
  const { product, apiKey } = await client.createProduct({ name: "Busy" });
  const keys = mongo.db(dbName).collection<{ _id: string; last_used_at: Date | null }>("api_keys");
  const id = hashApiKey(apiKey);
  assert.is((await keys.findOne({ _id: id }))!.last_used_at, null);
  await client.authenticate({ apiKey });
  const first = (await keys.findOne({ _id: id }))!.last_used_at;
  assert.ok(first && Date.now() - first.getTime() < 60_000);
  for (let i = 0; i < 10; i++) await client.authenticate({ apiKey });
  assert.equal((await keys.findOne({ _id: id }))!.last_used_at, first, "rewritten within 30 s");
  // Stale by more than the step: the next use moves it forward.
  await keys.updateOne({ _id: id }, { $set: { last_used_at: new Date(Date.now() - 120_000) } });
  await client.authenticate({ apiKey });
  const moved = (await keys.findOne({ _id: id }))!.last_used_at!;
  assert.ok(Date.now() - moved.getTime() < 60_000);
  const listed = (await client.listApiKeys({ productId: product!.id })).keys[0]!;
  assert.is(listed.lastUsedAt?.seconds, BigInt(Math.floor(moved.getTime() / 1000)));
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
