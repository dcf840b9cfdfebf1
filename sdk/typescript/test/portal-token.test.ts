import * as assert from "uvu/assert";
import { MeterApiError } from "../src/index.ts";
import { createUser, memoryLogger, rejects, stackMeter, stackSuite } from "./support/fixtures.ts";

const t = stackSuite("sdk: portalToken()", "sdk-portal");

t("mints a token that reads the user's own state from GET /portal/me", async (ctx) => {
  const m = stackMeter(ctx, { logger: memoryLogger() });
  const userId = await createUser(ctx.api, { max_spend_per_period: 5 });
  const before = Date.now();
  const minted = await m.portalToken(userId, { ttlSeconds: 120 });
  assert.is(minted.user_id, userId);
  assert.match(minted.token, /^mpt_/);
  const lifetime = Date.parse(minted.expires_at) - before;
  assert.ok(lifetime > 110_000 && lifetime <= 130_000, `${lifetime} ms`);
  const byDefault = Date.parse((await m.portalToken(userId)).expires_at) - before;
  assert.ok(byDefault > 3_590_000 && byDefault <= 3_610_000, `${byDefault} ms`);

  const me = await ctx.api.withKey(minted.token).get("/portal/me");
  assert.is(me.status, 200);
  assert.is(me.body.user_id, userId);
  assert.is(me.body.limits[0].max, 5);

  // Bounds are checked before any request; an unknown user is the service's 404.
  for (const ttlSeconds of [59, 86_401, 1.5]) await rejects(() => m.portalToken(userId, { ttlSeconds }), TypeError);
  await rejects(() => m.portalToken(""), TypeError);
  const missing = await rejects(() => m.portalToken("nobody-here"), MeterApiError);
  assert.is((missing as MeterApiError).status, 404);
});

t.run();
