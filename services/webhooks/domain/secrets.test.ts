import { test } from "uvu";
import * as assert from "uvu/assert";
import { SecretBox, generateSecret, parsePreviousKeys, parseSecretKey, sign } from "./secrets.ts";

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

test("during a rotation a secret sealed with a previous key opens, and check says which key sealed it", () => {
  const [oldKey, newKey, other] = [1, 2, 3].map((n) => Buffer.alloc(32, n));
  const sealed = new SecretBox(oldKey!).seal("whsec_x", "ep-1");
  const rotating = new SecretBox(newKey!, [other!, oldKey!]);
  assert.is(rotating.open(sealed, "ep-1"), "whsec_x");
  assert.is(rotating.check(sealed, "ep-1"), "previous");
  assert.is(rotating.check(rotating.seal("whsec_x", "ep-1"), "ep-1"), "current");
  assert.is(new SecretBox(newKey!).check(sealed, "ep-1"), "unopenable");
  assert.throws(() => new SecretBox(newKey!).open(sealed, "ep-1"), /opens with no configured key/);
  assert.equal(parsePreviousKeys(` ${"ab".repeat(32)} , ${Buffer.alloc(32, 9).toString("base64")}`).length, 2);
  assert.equal(parsePreviousKeys(undefined), []);
  assert.throws(() => parsePreviousKeys(`${"ab".repeat(32)},short`), /key 2 must be 32 bytes/);
});

test.run();
