import { test } from "uvu";
import * as assert from "uvu/assert";
import { toNano } from "@meter/rules";
import { grant, outstanding, takeBack } from "./lease-policy.ts";
import { bumpsVersion, spendsByLease } from "./lease-settlement.ts";
import { rng } from "../../../test/support/random.ts";

const now = 1_000_000;
const live = (granted: number, spent = 0) => ({ granted, spent, expires_at: new Date(now + 10_000) });

test("outstanding: granted - spent while live or within grace, nothing after, never negative", () => {
  assert.is(outstanding(live(10, 4), now, 0), 6);
  assert.is(outstanding(live(10, 12), now, 0), 0);
  assert.is(outstanding({ granted: 10, spent: 0, expires_at: new Date(now - 500) }, now, 1_000), 10);
  assert.is(outstanding({ granted: 10, spent: 0, expires_at: new Date(now - 1_000) }, now, 1_000), 0);
  assert.is(outstanding({ granted: 10, spent: 0 }, now, 1_000), 0);
});

test("grant: half of what remains alone, 1/(n+2) beside n holders, at least need, at most want", () => {
  const base = { cap: 100, settled: 20, holder: "me", need: 1, want: 1_000, now, graceMs: 0 };
  assert.equal(grant({ ...base, leases: {} }), { added: 40, remaining: 40, holders: 1 });
  const three = { a: live(10), b: live(10), c: live(10) };
  assert.is(grant({ ...base, leases: three }).added, 50 / 5);
  assert.is(grant({ ...base, leases: three, want: 2 }).added, 2);
  assert.is(grant({ ...base, leases: three, need: 30 }).added, 30);
  assert.is(grant({ ...base, leases: three, need: 51 }).added, 0, "more than remains: refused");
  assert.is(grant({ ...base, leases: { me: live(30) } }).added, 25, "own outstanding counts against remaining, not as another holder");
});

test("takeBack: what a holder holds beyond an equal share of the unsettled cap among the holders and one more, at most its offer, whole", () => {
  const base = { cap: 100, settled: 10, holder: "me", spare: 1_000, now, graceMs: 0 };
  // 90 unsettled; me and two others: a share is 90 / 4.
  const leases = { me: live(50, 5), a: live(20), b: live(1) };
  assert.equal(takeBack({ ...base, leases }), { added: 0, returned: Math.floor(45 - 22.5), remaining: 100 - 10 - 45 - 20 - 1 + 22, holders: 3 });
  assert.is(takeBack({ ...base, leases, spare: 7 }).returned, 7, "never more than offered");
  assert.is(takeBack({ ...base, leases: { me: live(20), a: live(20) } }).returned, 0, "within its share: nothing");
  assert.is(takeBack({ ...base, leases: { me: live(60) } }).returned, 15, "alone: half the unsettled cap kept");
  assert.is(takeBack({ ...base, leases: { me: { granted: 60, spent: 0, expires_at: new Date(now - 1) } } }).returned, 0, "a lapsed lease holds nothing to give");
  assert.is(takeBack({ ...base, leases: { me: live(60), a: { ...live(0), tokens: { m: { granted: 10, spent: 0 } } } } }).returned, 15, "a holder of tokens only is not a dollar holder");
});

test("token slices: whole tokens, counted per model apart from dollars and from other models", () => {
  const withTokens = (granted: number, spent = 0) => ({ ...live(0), tokens: { m: { granted, spent }, other: { granted: 500, spent: 0 } } });
  const base = { cap: 1001, settled: 0, holder: "me", need: 1, want: 10_000, now, graceMs: 0, dim: "m", whole: true };
  assert.equal(grant({ ...base, leases: {} }), { added: 500, remaining: 501, holders: 1 }, "1001 / 2, rounded down");
  assert.is(outstanding(withTokens(300, 100), now, 0, "m"), 200);
  assert.is(outstanding(withTokens(300, 100), now, 0), 0, "no dollars held");
  assert.is(grant({ ...base, leases: { a: withTokens(300, 100) } }).added, Math.floor(801 / 3));
  assert.is(grant({ ...base, leases: { a: withTokens(1000) }, need: 2 }).added, 0, "1 token left, 2 needed");
});

test("a grant never takes the total past the cap, whatever the holders already hold", () => {
  const random = rng(44);
  let granted = 0;
  for (let i = 0; i < 1_000; i++) {
    const leases: Record<string, ReturnType<typeof live>> = {};
    const n = Math.floor(random() * 10);
    for (let h = 0; h < n; h++) leases[`h${h}`] = live(random() * 20, random() * 10);
    const g = { cap: 100, settled: random() * 80, leases, holder: "me", need: random() * 5, want: random() * 50, now, graceMs: 0 };
    const held = Object.values(leases).reduce((a, l) => a + outstanding(l, now, 0), 0);
    const r = grant(g);
    // Random holdings may already pass the cap (nothing then is granted); a grant never adds to that.
    assert.ok(r.added === 0 || g.settled + held + r.added <= g.cap + 1e-9, JSON.stringify({ g, r }));
    assert.ok(r.added === 0 || r.added >= Math.min(g.need, g.want));
    // Where what is left covers the need, something is granted: a grant() refusing everything would pass the checks above.
    if (g.cap - g.settled - held >= 2 * g.need + 1e-9) assert.ok(r.added > 0, JSON.stringify({ g, r }));
    if (r.added > 0) granted++;
  }
  assert.ok(granted > 300, `${granted} of 1,000 draws granted anything`);
});

test("settlement: usage within what its lease holds outstanding leaves the version; beyond it, from a lapsed lease or from none, bumps it", () => {
  const event = (lease_id: string | null, cost: number, tokens = 0) => ({ product_id: "p", user_id: "u", lease_id, cost_total: cost, total_tokens: tokens, model: "m", input_tokens: 0, output_tokens: 0, tool_call_count: 0, timestamp: new Date(now) });
  const held = { a: { ...live(toNano(5), toNano(1)), tokens: { m: { granted: 100, spent: 0 } } }, old: { granted: toNano(5), spent: 0, expires_at: new Date(now - 60_000) } };
  const within = spendsByLease([event("a", 2, 50), event("a", 2, 50)], held, now, 0);
  assert.equal([within.leases.a!.cost, within.leases.a!.tokens.m, bumpsVersion(within)], [toNano(4), 100, false]);
  assert.is(bumpsVersion(spendsByLease([event("a", 4.5)], held, now, 0)), true, "more dollars than the slice had left");
  assert.is(bumpsVersion(spendsByLease([event("a", 1, 101)], held, now, 0)), true, "more tokens than the slice had left");
  assert.is(bumpsVersion(spendsByLease([event("old", 1)], held, now, 0)), true, "a lapsed lease holds nothing back");
  assert.is(bumpsVersion(spendsByLease([event("gone", 1)], held, now, 0)), true, "a lease the counter does not hold");
  assert.is(bumpsVersion(spendsByLease([event(null, 1)], held, now, 0)), true, "no lease");
  const uncapped = spendsByLease([{ ...event("a", 1, 500), model: "other" }], held, now, 0);
  assert.equal([uncapped.leases.a!.cost, uncapped.leases.a!.tokens, bumpsVersion(uncapped)], [toNano(1), {}, false], "tokens of a model the lease holds no slice of");
});

test.run();
