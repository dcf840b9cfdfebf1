import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("CreateUser and GetUser over gRPC");
withPlans(t);

t("creates and gets users; duplicates and bad ids are refused; products are isolated", async ({ client }) => {
  const productId = product();
  const weird = "a/b c?d#é🙂";
  const created = await client.createUser({ productId, externalUserId: weird, name: "Ann" });
  assert.is(created.user!.externalUserId, weird);
  assert.is(created.user!.planName, undefined);
  assert.is(created.user!.name, "Ann");
  const got = await client.getUser({ productId, externalUserId: weird });
  assert.is(got.user!.id, created.user!.id);
  assert.is((await failure(client.createUser({ productId, externalUserId: weird }))).code, Code.AlreadyExists);
  assert.is((await failure(client.createUser({ productId, externalUserId: "" }))).code, Code.InvalidArgument);
  assert.is((await failure(client.createUser({ productId, externalUserId: "x".repeat(256) }))).code, Code.InvalidArgument);
  const max = await client.createUser({ productId, externalUserId: "x".repeat(255) });
  assert.is(max.user!.externalUserId.length, 255);
  assert.is((await failure(client.getUser({ productId: product(), externalUserId: weird }))).code, Code.NotFound);
  // The same external id under another product is a different user.
  const other = await client.createUser({ productId: product(), externalUserId: weird });
  assert.is.not(other.user!.id, created.user!.id);
});

t.run();
