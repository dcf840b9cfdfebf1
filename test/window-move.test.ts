import { test } from "uvu";
import * as assert from "uvu/assert";
import { connectMongo } from "@meter/lib/mongo";
import { startStack } from "../cmd/stack.ts";
import { eventually } from "./support/eventually.ts";
import { Api } from "./support/http.ts";
import { testMongoUrl } from "./support/database.ts";
import { sendEvents, usageJson, userOnPlan } from "./support/rest.ts";
import { startTestStack } from "./support/stack.ts";
import { createLogger } from "@meter/lib/logger";

// An upgrade over stored data: a user's window document where versions before kept it (the
// "windows" collection, `<product>|<user>`) is read at once by the new version, moved beside the
// user's counters, and counted on from there, nothing lost or counted twice.
test("a window document of an earlier version counts on after an upgrade, moved beside the counters", async () => {
  const first = await startTestStack();
  const mongo = await connectMongo(await testMongoUrl());
  try {
    const { api, productId, apiKey } = await first.newProduct("Upgrade");
    const user = await userOnPlan(api, { limits: [{ name: "daily", metric: "spend", max: 10, window: "day" }] });
    await sendEvents(api, [usageJson(user, 1.25)]);
    const used = async (a = api) => (await a.get(`/users/${user}/limits`)).body.limits.find((d: { reason: string }) => d.reason === "limit:daily").used;
    await eventually(async () => (await used()) === 1.25, 30_000, "the event counted");
    await first.close();

    // The layout of an earlier version: the same document under its old id, in its old collection.
    const db = mongo.db(`${first.dbPrefix}_ingestion`);
    const doc = await db.collection("counters").findOne({ _id: `${productId}|w|${user}` as never });
    assert.ok(doc, "the window document beside the counters");
    await db.collection("windows").insertOne({ ...doc, _id: `${productId}|${user}` as never });
    await db.collection("counters").deleteOne({ _id: `${productId}|w|${user}` as never });

    const second = await startStack({ mongoUrl: await testMongoUrl(), dbPrefix: first.dbPrefix, logger: createLogger("test", "silent") });
    try {
      const upgraded = new Api(second.apiUrl, apiKey);
      assert.is(await used(upgraded), 1.25, "read at once after the upgrade");
      await sendEvents(upgraded, [usageJson(user, 0.5)]);
      await eventually(async () => (await used(upgraded)) === 1.75, 30_000, "the next event counted on");
      await eventually(async () => (await db.collection("windows").countDocuments()) === 0, 30_000, "the old collection emptied");
      const moved = await db.collection("counters").findOne({ _id: `${productId}|w|${user}` as never });
      assert.is(Object.values((moved as unknown as { w: Record<string, { n: number }> }).w).reduce((s, e) => s + Number(e.n), 0), 1_750_000_000, "once, in nano-dollars");
    } finally {
      await second.close();
    }
  } finally {
    await mongo.close();
  }
});

test.run();
