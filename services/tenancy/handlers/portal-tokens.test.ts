import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { hashPortalToken } from "@meter/lib/portal-tokens";
import { eventually } from "../../../test/support/eventually.ts";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withTenancy, type TenancySuite } from "../testing/suite.ts";

const t = suite<TenancySuite>("portal tokens");
withTenancy(t);


t("a token resolves to its product and user until its user's tokens are revoked", async ({ client }) => {
  const productId = (await client.createProduct({ name: "Portal" })).product!.id;
  const before = Date.now();
  const a = await client.createPortalToken({ productId, userId: "alice", ttlSeconds: 0 });
  assert.match(a.token, /^mpt_[A-Za-z0-9_-]{43}$/);
  const lifetime = timestampDate(a.expiresAt!).getTime() - before;
  assert.ok(lifetime >= 3_600_000 && lifetime < 3_610_000, `default lifetime ${lifetime} ms`);
  const a2 = await client.createPortalToken({ productId, userId: "alice", ttlSeconds: 60 });
  const b = await client.createPortalToken({ productId, userId: "bob", ttlSeconds: 86_400 });
  const auth = await client.authenticatePortalToken({ token: a.token });
  assert.equal([auth.productId, auth.userId], [productId, "alice"]);

  assert.is((await client.revokePortalTokens({ productId, userId: "alice" })).revoked, 2);
  assert.is(await rpcCode(client.authenticatePortalToken({ token: a.token })), Code.Unauthenticated);
  assert.is(await rpcCode(client.authenticatePortalToken({ token: a2.token })), Code.Unauthenticated);
  assert.is((await client.authenticatePortalToken({ token: b.token })).userId, "bob");
  // Revoking "bob" of another product leaves this product's bob alone.
  const other = (await client.createProduct({ name: "Other" })).product!.id;
  assert.is((await client.revokePortalTokens({ productId: other, userId: "bob" })).revoked, 0);
  assert.is((await client.authenticatePortalToken({ token: b.token })).userId, "bob");
});

t("lifetimes outside 60-86,400 s are refused; API keys and odd strings are not portal tokens", async ({ client }) => {
  const { product, apiKey } = await client.createProduct({ name: "Bounds" });
  const productId = product!.id;
  for (const ttlSeconds of [59, 86_401, -5]) {
    assert.is(await rpcCode(client.createPortalToken({ productId, userId: "u", ttlSeconds })), Code.InvalidArgument, String(ttlSeconds));
  }
  for (const token of [apiKey, "mpt_" + "A".repeat(43), "mpt_short", ""]) {
    assert.is(await rpcCode(client.authenticatePortalToken({ token })), Code.Unauthenticated, token);
  }
});

t("an expired token is refused with a message that says so", async ({ client, mongo, dbName }) => {
  const productId = (await client.createProduct({ name: "Expiry" })).product!.id;
  const { token } = await client.createPortalToken({ productId, userId: "u", ttlSeconds: 60 });
  await mongo.db(dbName).collection("portal_tokens").updateOne({ _id: hashPortalToken(token) as never }, { $set: { expires_at: new Date(Date.now() - 1000) } });
  const err = await client.authenticatePortalToken({ token }).then(() => undefined, (e: Error) => e);
  assert.match(String(err?.message), /expired/);
});

t("only the token's hash is stored", async ({ client, mongo, dbName }) => {
  const productId = (await client.createProduct({ name: "Hashed" })).product!.id;
  const { token } = await client.createPortalToken({ productId, userId: "u", ttlSeconds: 600 });
  const docs = await mongo.db(dbName).collection("portal_tokens").find({ product_id: productId }).toArray();
  assert.is(docs.length, 1);
  assert.not.ok(JSON.stringify(docs).includes(token.slice(4, 20)), "token body found in the database");
  assert.is(docs[0]!._id as unknown, hashPortalToken(token));
});


t.run();

// A service of its own: its first mint is the one that sweeps.
const sweep = suite<TenancySuite>("portal token sweep");
withTenancy(sweep);

sweep("the first mint of a process sweeps tokens that expired", async ({ client, mongo, dbName }) => {
  const productId = (await client.createProduct({ name: "Sweep" })).product!.id;
  const tokens = mongo.db(dbName).collection("portal_tokens");
  await tokens.insertOne({ _id: "f".repeat(64) as never, product_id: productId, user_id: "old", created_at: new Date(0), expires_at: new Date(1000) });
  await client.createPortalToken({ productId, userId: "new", ttlSeconds: 60 });
  // The sweep runs beside the answer: wait for it.
  await eventually(async () => (await tokens.countDocuments({ user_id: "old" })) === 0, 10_000, "the expired token swept");
  assert.is(await tokens.countDocuments({ user_id: "new" }), 1);
});

sweep.run();
