import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { createLogger } from "@meter/lib/logger";
import { rpcClient, serveRpc } from "@meter/lib/rpc";
import { createPlansService } from "../index.ts";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("ListUsers over gRPC");
withPlans(t);

t("ListUsers: pages in external id order by prefix and by plan; bad limits and cursors are INVALID_ARGUMENT", async ({ client }) => {
  const productId = product();
  const other = product();
  const [gold, free] = (await client.createPlans({ productId, plans: [{ name: "gold" }, { name: "free" }] })).plans;
  const ids = ["b", "a", "a.1", "a\u{1F600}", "a\uffff", "c", "A"];
  for (const id of ids) await client.createUser({ productId, externalUserId: id });
  await client.createUser({ productId: other, externalUserId: "a-other" });
  const all = async (req: { prefix?: string; planName?: string; limit?: number }) => {
    const out: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await client.listUsers({ productId, ...req, cursor });
      out.push(...res.users.map((u) => u.externalUserId));
      cursor = res.nextCursor;
    } while (cursor);
    return out;
  };
  const sorted = [...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  assert.equal(await all({ limit: 2 }), sorted);
  assert.equal(await all({ prefix: "a", limit: 1 }), ["a", "a.1", "a\uffff", "a\u{1F600}"]);
  assert.equal(await all({ prefix: "a." }), ["a.1"]);
  await client.setSubscription({ productId, externalUserId: "a", planId: gold!.id });
  await client.setSubscription({ productId, externalUserId: "c", planId: gold!.id });
  await client.setSubscription({ productId, externalUserId: "b", planId: free!.id });
  assert.equal(await all({ planName: "gold", limit: 1 }), ["a", "c"]);
  assert.equal(await all({ planName: "free" }), ["b"]);
  assert.equal(await all({ planName: "gold", prefix: "c" }), ["c"]);
  assert.equal(await all({ planName: "none such" }), []);
  const page = await client.listUsers({ productId, planName: "gold" });
  assert.equal(page.users.map((u) => u.planName), ["gold", "gold"]);
  for (const limit of [-1, 201]) assert.is((await failure(client.listUsers({ productId, limit }))).code, Code.InvalidArgument);
  assert.is((await client.listUsers({ productId })).users.length, ids.length, "limit 0 is the default page");
  assert.is((await failure(client.listUsers({ productId, cursor: "bogus" }))).code, Code.InvalidArgument);
  assert.is((await failure(client.listUsers({ productId: "" }))).code, Code.InvalidArgument);
});

t("ListUsers by plan: concurrent subscription changes leave every user listed under exactly its current plan", async ({ client, mongo, dbName }) => {
  const productId = product();
  const plans = (await client.createPlans({ productId, plans: [{ name: "p1" }, { name: "p2" }, { name: "p3" }] })).plans;
  const ids = Array.from({ length: 8 }, (_, i) => `u${i}`);
  for (const id of ids) await client.createUser({ productId, externalUserId: id });
  await Promise.all(
    ids.flatMap((id) => Array.from({ length: 6 }, (_, k) => client.setSubscription({ productId, externalUserId: id, planId: plans[(k + id.length) % 3]!.id }))),
  );
  // An entry left behind (as a crash between the writes would leave it) is not listed.
  await mongo.db(dbName).collection<{ _id: string; subs: string[] }>("plan_members").insertOne({ _id: `${productId}:${plans[0]!.id}:u-gone`, subs: ["x"] } as never);
  const byPlan = new Map<string, string[]>();
  for (const p of plans) {
    const res = await client.listUsers({ productId, planName: p!.name, limit: 200 });
    byPlan.set(p!.name, res.users.map((u) => u.externalUserId));
  }
  for (const id of ids) {
    const current = (await client.getUser({ productId, externalUserId: id })).user!.planName!;
    for (const [name, listed] of byPlan) assert.is(listed.includes(id), name === current, `${id} on ${current}, listed under ${name}`);
  }
});

t("ListUsers by plan: users subscribed before the member listing existed are listed after a start", async ({ mongo, dbName }) => {
  const logger = createLogger("plans-test", "silent");
  const peers = { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" };
  const db = mongo.db(`${dbName}_backfill`);
  const start = async () => {
    const module = await createPlansService({ db, logger, peers });
    const server = await serveRpc({ modules: [module], port: 0, logger });
    return { server, client: rpcClient(PlansService, server.url) };
  };
  const first = await start();
  const productId = product();
  const [plan] = (await first.client.createPlans({ productId, plans: [{ name: "old" }] })).plans;
  for (const id of ["x1", "x2"]) {
    await first.client.createUser({ productId, externalUserId: id });
    await first.client.setSubscription({ productId, externalUserId: id, planId: plan!.id });
  }
  await first.server.close();
  await db.collection("plan_members").drop();
  const second = await start();
  try {
    assert.equal((await second.client.listUsers({ productId, planName: "old" })).users.map((u) => u.externalUserId), ["x1", "x2"]);
  } finally {
    await second.server.close();
  }
});

t.run();
