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

test.run();
