import { test } from "uvu";
import * as assert from "uvu/assert";
import { decodeCursor, encodeCursor } from "./list-deliveries.ts";

test("cursors", () => {
  const k = { created_at: new Date("2026-11-20T10:00:00.123Z"), id: "whdel_x" };
  assert.equal(decodeCursor(encodeCursor(k)), k);
  assert.throws(() => decodeCursor("!!"));
});

test.run();
