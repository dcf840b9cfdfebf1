// A group of lease requests granted against one read of the counter: each counts the slices
// granted before it, whatever the holder is called.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { planGroup, type LeasedCounter, type Pending } from "./store.ts";

const now = new Date("2026-03-07T17:00:00Z");
const ref = { id: "p|c|u", productId: "p", userId: "u", start: new Date("2026-03-01T00:00:00Z"), end: new Date("2026-04-01T00:00:00Z") };
const counter = { _id: ref.id, product_id: "p", user_id: "u", period_start: ref.start, period_end: ref.end, cost_nano: 0, tokens: 0, tool_calls: 0, events: 0, tokens_by_model: {}, cost_nano_by_model: {}, jobs: {}, version: 0 } as unknown as LeasedCounter;
const ask = (holder: string, need: number, want: number): Pending => ({ ref, a: { holder, asks: [{ dim: null, cap: 100, need, want }], ttlMs: 60_000, graceMs: 30_000, now } });

test("requests of one group share the cap: the second counts the first's slice, also from a holder named __proto__", () => {
  for (const first of ["h1", "__proto__", "constructor"]) {
    const { outcomes } = planGroup(counter, [ask(first, 0, 100), ask("h2", 100, 100)]);
    const added = outcomes.map((o) => ("view" in o ? o.view.grants[0]!.added : -1));
    assert.ok(added[0]! > 0, `${first} is granted`);
    assert.ok(added[0]! + added[1]! <= 100, `${first}: ${added} outstanding past the cap of 100`);
  }
});

test("requests granted in one write share what is free equally, and leave a newcomer as much as each took", () => {
  const withHolder = { ...counter, leases: { old: { granted: 40, spent: 0, expires_at: new Date(now.getTime() + 60_000) } } } as LeasedCounter;
  // 60 free beside one holder: four asking together take 60 / (1 + 4 + 1) each.
  const { outcomes } = planGroup(withHolder, ["a", "b", "c", "d"].map((h) => ask(h, 0, 100)));
  assert.equal(
    outcomes.map((o) => ("view" in o ? o.view.grants[0]!.added : -1)),
    [10, 10, 10, 10],
  );
  // Alone, the first would have taken 60 / 3.
  const alone = planGroup(withHolder, [ask("a", 0, 100)]).outcomes[0]!;
  assert.is("view" in alone && alone.view.grants[0]!.added, 20);
  // A request that wants nothing does not count among those sharing.
  const probe = planGroup(counter, [ask("a", 0, 100), ask("probe", 0, 0)]).outcomes[0]!;
  assert.is("view" in probe && probe.view.grants[0]!.added, 50);
});

test.run();
