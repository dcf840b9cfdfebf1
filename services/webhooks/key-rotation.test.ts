// WEBHOOKS_SECRET_KEY rotation: a replica started with a new key and the old one as previous
// opens every stored signing secret and seals each again with the new key, so the old key can
// go; a key that opens none of them is said at start, never taken silently.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createLogger } from "@meter/lib/logger";
import { webhookSecrets } from "@meter/lib/metrics";
import { eventually } from "../../test/support/eventually.ts";
import { SecretBox } from "./domain/secrets.ts";
import { resealSecrets } from "./flows/reseal.ts";
import { EndpointStore } from "./store/endpoints.ts";
import { startInstance, withInstance, type InstanceSuite } from "./testing/instance.ts";
import { Receiver, signatureValid } from "./testing/receiver.ts";

const [A, B, C] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2), Buffer.alloc(32, 3)];
const t = suite<InstanceSuite>("webhooks key rotation");
withInstance(t, "webhooks_key_rotation", { runJobs: false, secretKey: A });

t("a replica on the new key with the old one as previous opens every secret, seals it again with the new key, and signs with it", async ({ svc, db }) => {
  const productId = randomUUID();
  const rx = await new Receiver().start();
  const { endpoint, secret } = await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["gate_event.blocked"] });
  const endpointId = endpoint!.id;
  const stored = async () => (await db.collection<{ _id: string; secret_sealed: string }>("endpoints").findOne({ _id: endpointId }))!.secret_sealed;
  const rotated = await startInstance(db, { runJobs: false, secretKey: B, previousSecretKeys: [A] });
  try {
    // Its start re-seals in the background: the stored form comes to open with the new key alone.
    await eventually(async () => new SecretBox(B).check(await stored(), endpointId) === "current", 10_000, "the secret sealed again with the new key");
    assert.is(new SecretBox(A).check(await stored(), endpointId), "unopenable", "the old key no longer opens it");
    // The next pass finds nothing under the old key: the sign that it may go.
    const logger = createLogger("webhooks-test", "silent");
    assert.equal(await resealSecrets({ endpoints: new EndpointStore(db), secrets: new SecretBox(B, [A]), logger }), { resealed: 0, previous: 0, unopenable: 0 });
    assert.is((await rotated.client.getEndpointSecret({ productId, endpointId })).secret, secret);
    await rotated.client.testEndpoint({ productId, endpointId });
    assert.ok(signatureValid(secret, rx.received[0]!), "a delivery is signed with the endpoint's own secret, unchanged");
  } finally {
    await rotated.close();
    await rx.stop();
  }
  // Without the key that sealed it, the secret opens with none: counted and said at start, not re-sealed.
  const logger = createLogger("webhooks-test", "silent");
  const wrong = await resealSecrets({ endpoints: new EndpointStore(db), secrets: new SecretBox(C), logger });
  assert.equal(wrong, { resealed: 0, previous: 0, unopenable: 1 });
  // ... and exported for the alert, from that start on.
  const gauge = Object.fromEntries((await webhookSecrets.get()).values.map((v) => [v.labels.key, v.value]));
  assert.equal(gauge, { current: 0, previous: 0, none: 1 });
  assert.is(new SecretBox(B).check(await stored(), endpointId), "current", "a key that opens nothing changes nothing");
});

t.run();
