import { test } from "uvu";
import * as assert from "uvu/assert";
import { add, pick, topUsers, zero, type BySource, type Figures, type Source } from "./rollup.ts";
import { UserDayBuilder, UserDirectory, WindowUsers, userDayBytes } from "./user-columns.ts";
import { UserDayCache } from "../store/user-day-cache.ts";

type Row = [string, BySource["auto"], BySource["manual"]];
const rows: Row[][] = [
  [["b", [1.1, 10, 1], [0, 0, 0]], ["a", [0.2, 5, 1], [0.1, 1, 1]], ["z", [0, 0, 0], [0, 0, 0]]],
  [["c", [1.3, 3, 2], [0, 0, 0]], ["a", [2.2, 1, 1], [0, 0, 0]], ["m", [0, 0, 0], [0.7, 0, 1]]],
  [["b", [0.2, 0, 1], [0, 0, 0]], ["d", [0, 7, 1], [0, 0, 0]]],
];

test("WindowUsers gives the Map fold's figures, bit for bit, and its order (cost, then id)", () => {
  for (const source of [undefined, "auto", "manual"] as (Source | undefined)[]) {
    const dir = new UserDirectory();
    const w = new WindowUsers(dir, source);
    const ref = new Map<string, Figures>();
    for (const day of rows) {
      const b = new UserDayBuilder(dir);
      for (const [id, auto, manual] of day) {
        b.add(id, auto, manual);
        const f = pick({ auto, manual }, source);
        if (f[0] !== 0 || f[1] !== 0 || f[2] !== 0) ref.set(id, add(ref.get(id) ?? zero(), f));
      }
      w.add(b.build());
    }
    for (const limit of [0, 1, 2, 3, 10]) assert.equal(w.top(limit), topUsers(ref, limit), `${source} ${limit}`);
    assert.is(w.active(), [...ref.values()].filter((f) => f[2] > 0).length);
  }
});

test("UserDayCache stays within its bytes, least recently used day first, and checks versions", () => {
  const day = (dir: UserDirectory, n: number) => {
    const b = new UserDayBuilder(dir);
    for (let i = 0; i < n; i++) b.add(`u${i}`, [1, 1, 1], [0, 0, 0]);
    return b.build();
  };
  const probe = day(new UserDirectory(), 100);
  const cache = new UserDayCache(userDayBytes(probe) * 3 + 100 * 100);
  const p = cache.product("p");
  for (const d of ["d1", "d2", "d3"]) cache.put(p, "p", d, "v1", day(p.dir, 100));
  assert.ok(cache.get(p, "p", "d1", "v1"), "cached");
  assert.not.ok(cache.get(p, "p", "d1", "v2"), "another version is a miss");
  cache.put(p, "p", "d4", "v1", day(p.dir, 100)); // d2 is now the least recently used
  assert.ok(cache.size() <= userDayBytes(probe) * 3 + 100 * 100);
  assert.not.ok(cache.get(p, "p", "d2", "v1"));
  assert.ok(cache.get(p, "p", "d1", "v1") && cache.get(p, "p", "d4", "v1"));

  // A second product pushes the first out entirely, its numbering with it.
  const q = cache.product("q");
  for (const d of ["d1", "d2", "d3", "d4"]) cache.put(q, "q", d, "v1", day(q.dir, 100));
  assert.not.ok(cache.get(p, "p", "d1", "v1") || cache.get(p, "p", "d4", "v1"));
  assert.ok(cache.product("p") !== p, "p's numbering was dropped");
  // Columns numbered by a dropped numbering are not kept beside the new one.
  cache.put(p, "p", "d9", "v1", day(p.dir, 10));
  assert.not.ok(cache.get(cache.product("p"), "p", "d9", "v1"));
  assert.ok(cache.size() <= userDayBytes(probe) * 3 + 100 * 100);

  const none = new UserDayCache(0);
  const r = none.product("r");
  none.put(r, "r", "d1", "v1", day(r.dir, 10));
  none.release("r", r);
  assert.is(none.size(), 0);
});

test.run();
