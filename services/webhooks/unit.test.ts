import { test } from "uvu";
import * as assert from "uvu/assert";
import { validateSubscribedEvents, stableUuid } from "./domain/events.ts";
import { delayBefore } from "./flows/attempt.ts";
import { decodeCursor, encodeCursor } from "./handlers/list-deliveries.ts";
import { previousPeriod } from "./domain/periods.ts";
import { SecretBox, generateSecret, parseSecretKey, sign } from "./domain/secrets.ts";
import { addressProblem, endpointUrlProblem } from "./adapters/url-guard.ts";

const strict = { allowInsecure: false };
const local = { allowInsecure: true };

test("retry table: immediate, 1 min, 5 min, 30 min, 2 h, 8 h", () => {
  assert.equal([1, 2, 3, 4, 5, 6].map((n) => delayBefore(n, 1)), [0, 60_000, 300_000, 1_800_000, 7_200_000, 28_800_000]);
  assert.is(delayBefore(2, 1 / 6000), 10);
});

test("signature is sha256= hex HMAC over '<timestamp>.<body>'", () => {
  // reference value computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
  assert.is(sign("whsec_test", 1700000000, '{"a":1}'), "sha256=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789");
  assert.match(sign("whsec_test", 1, "x"), /^sha256=[0-9a-f]{64}$/);
  assert.is.not(sign("whsec_test", 1, "x"), sign("whsec_test", 2, "x"));
});

test("sealed secrets open only with the same key and endpoint", () => {
  const box = new SecretBox(parseSecretKey("ab".repeat(32)));
  const secret = generateSecret();
  const sealed = box.seal(secret, "ep-1");
  assert.not.ok(sealed.includes(secret.slice(6)));
  assert.is(box.open(sealed, "ep-1"), secret);
  assert.throws(() => box.open(sealed, "ep-2"));
  assert.throws(() => new SecretBox(parseSecretKey("cd".repeat(32))).open(sealed, "ep-1"));
  assert.throws(() => parseSecretKey("short"));
  assert.is(parseSecretKey(Buffer.alloc(32, 7).toString("base64")).length, 32);
});

test("address policy", () => {
  for (const ip of ["8.8.8.8", "2606:4700::1"]) assert.is(addressProblem(ip, strict), null, ip);
  for (const ip of ["127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fc00::1", "::ffff:10.0.0.1", "224.0.0.1"]) {
    assert.ok(addressProblem(ip, strict), ip);
  }
  assert.is(addressProblem("127.0.0.1", local), null);
  assert.ok(addressProblem("10.0.0.1", local));
});

test("URL check resolves the host and refuses any private answer", async () => {
  const answers = (list: string[]) => async () => list.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  assert.is(await endpointUrlProblem("https://hooks.example/x", strict, answers(["93.184.215.14"])), null);
  assert.match(String(await endpointUrlProblem("https://hooks.example/x", strict, answers(["93.184.215.14", "10.0.0.7"]))), /resolves to/);
  assert.match(String(await endpointUrlProblem("https://nowhere.example/", strict, async () => { throw new Error("ENOTFOUND"); })), /does not resolve/);
  // The refusal names the switch a local setup needs.
  assert.match(String(await endpointUrlProblem("http://hooks.example/", strict, answers(["93.184.215.14"]))), /must use https.*WEBHOOKS_ALLOW_INSECURE_URLS=true/);
  assert.match(String(await endpointUrlProblem("https://" + "a".repeat(2100) + ".example/", strict)), /at most/);
});

test("summary periods: previous UTC day, Monday week, calendar month", () => {
  const iso = (p: { start: Date; end: Date }) => [p.start.toISOString(), p.end.toISOString()];
  assert.equal(iso(previousPeriod("daily", new Date("2026-03-01T06:00:00Z"))), ["2026-02-28T00:00:00.000Z", "2026-03-01T00:00:00.000Z"]);
  // 2026-11-23 is a Monday
  assert.equal(iso(previousPeriod("weekly", new Date("2026-11-23T06:00:00Z"))), ["2026-11-16T00:00:00.000Z", "2026-11-23T00:00:00.000Z"]);
  assert.equal(iso(previousPeriod("weekly", new Date("2026-11-25T06:00:00Z"))), ["2026-11-16T00:00:00.000Z", "2026-11-23T00:00:00.000Z"]);
  assert.equal(iso(previousPeriod("monthly", new Date("2026-01-01T06:00:00Z"))), ["2025-12-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"]);
});

test("subscription lists and cursors", () => {
  assert.ok("error" in validateSubscribedEvents([]));
  assert.ok("error" in validateSubscribedEvents(["usage.threshold.50", "nope"]));
  assert.equal(validateSubscribedEvents(["gate_event.blocked", "gate_event.blocked"]), { ok: ["gate_event.blocked"] });
  const k = { created_at: new Date("2026-11-20T10:00:00.123Z"), id: "whdel_x" };
  assert.equal(decodeCursor(encodeCursor(k)), k);
  assert.throws(() => decodeCursor("!!"));
  assert.is(stableUuid("a", "b"), stableUuid("a", "b"));
  assert.match(stableUuid("a", "b"), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.is.not(stableUuid("a", "b"), stableUuid("ab", ""));
});

test.run();
