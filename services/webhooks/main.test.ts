// The webhooks service as Kubernetes runs it (services/webhooks/main.ts on its own).
import { randomBytes } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "../../test/support/database.ts";
import { eventually } from "../../test/support/eventually.ts";
import { freePort, spawnEntry } from "../../test/support/processes.ts";

const t = suite("webhooks process: the secret key");

async function env(over: Record<string, string | undefined>) {
  return {
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB: `whmain_${randomBytes(4).toString("hex")}`,
    PORT: String(await freePort()),
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    WEBHOOKS_SECRET_KEY: undefined,
    WEBHOOKS_ALLOW_DEVELOPMENT_KEY: undefined,
    ...over,
  };
}

t("refuses to start without WEBHOOKS_SECRET_KEY and says how to make one", async () => {
  const proc = spawnEntry("services/webhooks/main.ts", await env({}));
  const code = await new Promise<number | null>((resolve) => proc.child.once("exit", resolve));
  assert.is(code, 1);
  assert.match(proc.output(), /WEBHOOKS_SECRET_KEY is unset/);
  assert.match(proc.output(), /openssl rand -hex 32/);
  assert.not.match(proc.output(), /service listening/);
});

t("refuses a key that is not 32 bytes before it reaches for the database, even with the database down", async () => {
  const proc = spawnEntry("services/webhooks/main.ts", await env({ WEBHOOKS_SECRET_KEY: randomBytes(24).toString("base64"), MONGODB_URL: `mongodb://127.0.0.1:${await freePort()}/` }));
  const code = await new Promise<number | null>((resolve) => proc.child.once("exit", resolve));
  assert.is(code, 1);
  assert.match(proc.output(), /WEBHOOKS_SECRET_KEY must be 32 bytes/);
  assert.not.match(proc.output(), /database is not reachable/);
});

t("starts with a key, and on the development key only when told to, with a warning", async () => {
  for (const [over, warns] of [
    [{ WEBHOOKS_SECRET_KEY: randomBytes(32).toString("hex") }, false],
    [{ WEBHOOKS_ALLOW_DEVELOPMENT_KEY: "true" }, true],
  ] as const) {
    const proc = spawnEntry("services/webhooks/main.ts", await env(over));
    try {
      await eventually(() => proc.output().includes("webhooks service listening"), 60_000, `start with ${Object.keys(over)}`);
      assert.is(proc.output().includes("public development key"), warns, proc.output());
    } finally {
      await proc.stop();
    }
  }
});

t.run();
