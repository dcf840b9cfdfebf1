import { suite } from "uvu";
import * as assert from "uvu/assert";
import { toTimestamp } from "@meter/lib/time";
import { withTenancy, type TenancySuite } from "../testing/suite.ts";

const t = suite<TenancySuite>("ListApiKeys");
withTenancy(t);

t("the product's keys oldest first, each shown by its prefix; another product's keys are not listed", async ({ client }) => {
  const { product, apiKey } = await client.createProduct({ name: "Keys" });
  const productId = product!.id;
  const expiresAt = toTimestamp(new Date(Date.now() + 3_600_000));
  const ingest = await client.createApiKey({ productId, name: "ingest", scope: "ingest", expiresAt });
  await client.createProduct({ name: "Other" });
  const keys = (await client.listApiKeys({ productId })).keys;
  assert.equal(keys.map((k) => [k.name, k.scope]), [["default", "admin"], ["ingest", "ingest"]]);
  assert.equal(keys[1], ingest.key);
  assert.equal([keys[0]!.prefix, keys[0]!.expiresAt, keys[1]!.expiresAt], [apiKey.slice(0, 10), undefined, expiresAt]);
  // A key that was used says when.
  assert.is(keys[0]!.lastUsedAt, undefined);
  await client.authenticate({ apiKey });
  const used = (await client.listApiKeys({ productId })).keys[0]!;
  assert.ok(used.lastUsedAt, "last_used_at after authenticating");
});

t.run();
