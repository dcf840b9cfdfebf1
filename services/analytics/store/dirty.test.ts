import { test } from "uvu";
import * as assert from "uvu/assert";
import { connectMongo } from "@meter/lib/mongo";
import { freshDbName, testMongoUrl } from "../../../test/support/database.ts";
import { DirtyStore } from "./dirty.ts";

test("the backlog probe counts the day marks waiting for their roll-up, and none once they are cleared", async () => {
  const mongo = await connectMongo(await testMongoUrl());
  try {
    const store = new DirtyStore(mongo.db(freshDbName("dirty_days")));
    assert.is((await store.backlog()).depth, 0);
    await store.mark([{ productId: "p", day: "2026-12-04" }, { productId: "p", day: "2026-12-05" }]);
    assert.is((await store.backlog()).depth, 2);
    const pending = await store.pending();
    await store.clear([...pending.values()].flatMap((p) => p.markIds));
    assert.is((await store.backlog()).depth, 0);
  } finally {
    await mongo.close();
  }
});

test.run();
