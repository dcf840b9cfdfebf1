import { test } from "uvu";
import * as assert from "uvu/assert";
import { characters } from "./characters.ts";

test("characters: code points, as JSON Schema's maxLength counts them", () => {
  assert.is(characters(""), 0);
  assert.is(characters("abc"), 3);
  assert.is(characters("名前"), 2);
  assert.is(characters("😀😀"), 2);
  assert.is("😀😀".length, 4);
  // An unpaired surrogate counts as one, as it stands.
  assert.is(characters("a\ud800b"), 3);
  assert.is(characters("\udc00\ud83d\ude00"), 2);
});

test.run();
