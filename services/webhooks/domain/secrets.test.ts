import { test } from "uvu";
import * as assert from "uvu/assert";
import { SecretBox, generateSecret, parseSecretKey, sign } from "./secrets.ts";

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

test.run();
