import { test } from "uvu";
import * as assert from "uvu/assert";
import { connectMongo } from "@meter/lib/mongo";
import { freshDbName, testMongoUrl } from "../../../test/support/database.ts";
import { PortalTokenStore } from "./portal-tokens.ts";

test("expired tokens go, live ones stay; a user's tokens go together", async () => {
  const mongo = await connectMongo(await testMongoUrl());
  try {
    const store = new PortalTokenStore(mongo.db(freshDbName("portal_tokens")));
    await store.init();
    const now = new Date("2026-12-05T12:00:00Z");
    const token = (id: string, user: string, expires: number) =>
      store.insert({ _id: id, product_id: "p", user_id: user, created_at: new Date(now.getTime() - 3_600_000), expires_at: new Date(now.getTime() + expires) });
    await token("expired-1", "u1", -1);
    await token("expired-2", "u2", 0);
    await token("live", "u1", 60_000);
    await token("other", "u3", 60_000);
    assert.is(await store.deleteExpired(now), 2);
    assert.is(await store.byHash("expired-1"), null);
    assert.ok(await store.byHash("live"));
    assert.is(await store.deleteUser("p", "u1"), 1);
    assert.is(await store.byHash("live"), null);
    assert.ok(await store.byHash("other"));
  } finally {
    await mongo.close();
  }
});

test.run();
