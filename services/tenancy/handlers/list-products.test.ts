import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { withTenancy, type TenancySuite } from "../testing/suite.ts";

const t = suite<TenancySuite>("ListProducts");
withTenancy(t);

t("a product's key sees that product alone; an unknown product lists none; no product is INVALID_ARGUMENT", async ({ client }) => {
  const a = (await client.createProduct({ name: "Alpha", contactEmail: "ops@alpha.example" })).product!;
  await client.createProduct({ name: "Beta" });
  assert.equal((await client.listProducts({ productId: a.id })).products, [a]);
  assert.equal([a.name, a.slug, a.contactEmail, a.contactName], ["Alpha", "alpha", "ops@alpha.example", undefined]);
  assert.equal((await client.listProducts({ productId: "prod_none" })).products, []);
  const none = await rpcFailure(client.listProducts({ productId: "" }));
  assert.equal([none?.code, none?.rawMessage], [Code.InvalidArgument, "product_id is required"]);
});

t.run();
