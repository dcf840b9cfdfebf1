import { test } from "uvu";
import * as assert from "uvu/assert";
import { hash53, KeyHashes } from "./key-hashes.ts";

test("every key added is found, through the table's growth; a key added twice counts once", () => {
  const keys = new KeyHashes();
  const added = Array.from({ length: 50_000 }, (_, i) => `u:product/${i}-${(i * 7919) % 1000}`);
  for (const k of added) keys.add(k);
  keys.add(added[0]!);
  assert.is(keys.size, added.length);
  assert.ok(added.every((k) => keys.has(k)), "no key added is missed");
  const others = Array.from({ length: 50_000 }, (_, i) => `g:product/${i}`);
  assert.is(others.filter((k) => keys.has(k)).length, 0, "keys never added are not found (a 53-bit hash: a false yes is about one in 10^11 a lookup here)");
});

test("the table stays at most half full, so a lookup always meets a free slot: 16 to 32 bytes a key", () => {
  const keys = new KeyHashes();
  for (let i = 0; i < 1_030; i++) {
    keys.add(`u:${i}`);
    assert.ok(keys.bytes >= 16 * keys.size, `at most half full at ${keys.size} keys`);
    assert.ok(keys.size <= 8 || keys.bytes <= 32 * keys.size, `at least a quarter full at ${keys.size} keys`);
  }
  assert.is(keys.has("u:absent"), false);
  const of = KeyHashes.of(new Set(Array.from({ length: 600 }, (_, i) => `g:${i}`)));
  assert.is(of.bytes, KeyHashes.bytesFor(600));
  assert.is(of.bytes, 8 * 2048, "a table made for 600 keys: the power of two at least twice that");
});

test("the hash tells apart strings that differ in one code unit or in order, and is never 0", () => {
  assert.is.not(hash53("u:a/1"), hash53("u:a/2"));
  assert.is.not(hash53("ab"), hash53("ba"));
  assert.ok(Number.isSafeInteger(hash53("")) && hash53("") > 0);
});

test.run();
