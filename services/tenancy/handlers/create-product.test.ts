import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withTenancy, type TenancySuite } from "../testing/suite.ts";

const t = suite<TenancySuite>("CreateProduct");
withTenancy(t);

t("refuses an empty or long name, a long contact name and a malformed email; a product comes with one admin key", async ({ client }) => {
  for (const req of [{ name: " " }, { name: "x".repeat(256) }, { name: "A", contactName: "x".repeat(256) }, { name: "A", contactEmail: "not-an-email" }]) {
    assert.is(await rpcCode(client.createProduct(req)), Code.InvalidArgument, JSON.stringify(req));
  }
  const { product, apiKey } = await client.createProduct({ name: "Acme", contactName: "Ops", contactEmail: "ops@acme.test" });
  assert.equal([product!.contactName, product!.contactEmail], ["Ops", "ops@acme.test"]);
  const keys = (await client.listApiKeys({ productId: product!.id })).keys;
  assert.equal(keys.map((k) => [k.name, k.scope, apiKey.startsWith(k.prefix)]), [["default", "admin", true]]);
});

t.run();
