// What no one handler decides alone (each handler's own test is beside it in handlers/).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code, ConnectError } from "@connectrpc/connect";
import { product, withPlans, type PlansSuite } from "./testing/suite.ts";

const t = suite<PlansSuite>("plans service over gRPC");
withPlans(t);

t("many parallel creations of one plan name or one user yield exactly one record", async ({ client, mongo, dbName }) => {
  const productId = product();
  const plans = await Promise.allSettled(
    Array.from({ length: 20 }, () => client.createPlans({ productId, plans: [{ name: "race" }] })),
  );
  assert.is(plans.filter((r) => r.status === "fulfilled").length, 1);
  for (const r of plans) if (r.status === "rejected") assert.is(ConnectError.from(r.reason).code, Code.AlreadyExists);
  const users = await Promise.allSettled(
    Array.from({ length: 20 }, () => client.createUser({ productId, externalUserId: "racer" })),
  );
  assert.is(users.filter((r) => r.status === "fulfilled").length, 1);
  for (const r of users) if (r.status === "rejected") assert.is(ConnectError.from(r.reason).code, Code.AlreadyExists);
  assert.is(await mongo.db(dbName).collection("plans").countDocuments({ product_id: productId }), 1);
  assert.is(await mongo.db(dbName).collection("users").countDocuments({ product_id: productId }), 1);
});

t.run();
