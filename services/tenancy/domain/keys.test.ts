import { test } from "uvu";
import * as assert from "uvu/assert";
import { API_KEY_PREFIX, generateApiKey, hashApiKey, looksLikeApiKey, slugify } from "./keys.ts";

test("keys carry the prefix and at least 128 bits of randomness", () => {
  const key = generateApiKey();
  assert.ok(key.startsWith(API_KEY_PREFIX));
  const body = Buffer.from(key.slice(API_KEY_PREFIX.length), "base64url");
  assert.ok(body.length * 8 >= 128, `only ${body.length * 8} bits`);
  const many = new Set(Array.from({ length: 1000 }, generateApiKey));
  assert.is(many.size, 1000);
});

test("hashes are deterministic, hex SHA-256, and never the key itself", () => {
  const key = generateApiKey();
  assert.is(hashApiKey(key), hashApiKey(key));
  assert.match(hashApiKey(key), /^[0-9a-f]{64}$/);
  assert.is.not(hashApiKey(key), hashApiKey(generateApiKey()));
  assert.not.ok(hashApiKey(key).includes(key.slice(3, 20)));
});

test("shape check accepts generated keys and rejects others", () => {
  assert.ok(looksLikeApiKey(generateApiKey()));
  for (const bad of ["", "mk_", "mk_short", "xx_" + "a".repeat(43), "mk_" + "a".repeat(43) + "!", "Bearer mk_x"]) {
    assert.not.ok(looksLikeApiKey(bad), bad);
  }
});

test("slugs are lowercase, dash-separated and never empty", () => {
  assert.is(slugify("Acme Inc."), "acme-inc");
  assert.is(slugify("  Ünïcode   Café  "), "unicode-cafe");
  assert.is(slugify("!!!"), "product");
  assert.ok(slugify("x".repeat(300)).length <= 60);
});

test.run();
