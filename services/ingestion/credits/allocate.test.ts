import { test } from "uvu";
import * as assert from "uvu/assert";
import { balanceNotices, balanceOf, draw, drawOrder, forgiven, needed, statusAt, type GrantState } from "./allocate.ts";
import { AccountChange, type CreditAccountDoc } from "./account.ts";
import { creditView, grantMessage } from "./view.ts";
import type { GrantRecordDoc } from "./store.ts";

const NOW = Date.UTC(2026, 10, 15, 12);
const D = (ms: number) => new Date(NOW + ms);
const N = 1_000_000_000;

function grant(id: string, amount: number, o: Partial<GrantState> = {}): GrantState {
  return { id, amount_nano: amount * N, remaining_nano: amount * N, kind: "paid", priority: 50, effective_at: D(-1000), expires_at: null, created_at: D(-1000), ...o };
}

test("draw order: priority, then expiry (never last), then effective date, then id", () => {
  const gs = [
    grant("never", 1),
    grant("late", 1, { expires_at: D(10_000) }),
    grant("soon", 1, { expires_at: D(5_000) }),
    grant("promo", 1, { priority: 10 }),
    grant("b", 1, { expires_at: D(5_000) }),
    grant("older", 1, { expires_at: D(5_000), effective_at: D(-5000) }),
  ];
  assert.equal([...gs].sort(drawOrder).map((g) => g.id), ["promo", "older", "b", "soon", "late", "never"]);
});

test("draw takes active grants in order and reports what none covers", () => {
  const gs = [grant("paid", 1), grant("promo", 0.5, { priority: 10 }), grant("future", 5, { effective_at: D(60_000) }), grant("gone", 5, { expires_at: D(-1) })];
  const { taken, uncovered } = draw(gs, 0.7 * N, NOW);
  assert.equal([...taken], [["promo", 0.5 * N], ["paid", 0.2 * N]]);
  assert.is(uncovered, 0);
  const over = draw(gs, 2 * N, NOW);
  assert.is(over.uncovered, 0.5 * N, "pending and expired grants are not drawn");
});

test("status and balance: a grant past expires_at is expired before any job ran; pending is apart", () => {
  const gs = [grant("a", 1), grant("p", 2, { effective_at: D(1000) }), grant("x", 4, { expires_at: D(0) }), grant("d", 1, { remaining_nano: 0 })];
  assert.equal(gs.map((g) => statusAt(g, NOW)), ["active", "pending", "expired", "depleted"]);
  assert.equal(balanceOf(gs, 0.25 * N, NOW), { balance: 0.75 * N, pending: 2 * N });
});

test("needed is the spend beyond the allowance", () => {
  assert.is(needed(5, 3), 2);
  assert.is(needed(2, 3), 0);
});

test("what was spent while credits were off uses the allowance first and is never drawn", () => {
  // $5 on a free plan, then a prepaid plan without allowance: only what came after draws.
  assert.is(needed(5, 0, 5), 0);
  assert.is(needed(6, 0, 5), 1);
  assert.is(forgiven(5, 0), 5);
  // $5 on a free plan, then a plan of $50 and credits: the allowance has $45 left.
  assert.is(needed(50, 50, 5), 0);
  assert.is(needed(51, 50, 5), 1);
  assert.is(forgiven(5, 50), 0);
  // All of it while credits were off: nothing to draw, whatever the allowance.
  assert.is(needed(80, 10, 80), 0);
  assert.is(forgiven(80, 10), 70);
});

test("credits.low fires once per crossing and re-arms at or above low_at; depleted from > 0 to <= 0", () => {
  assert.equal(balanceNotices(3, 1, 2, true), { notices: ["credits.low"], armed: false });
  assert.equal(balanceNotices(1, 0.5, 2, false), { notices: [], armed: false }, "not again while disarmed");
  assert.equal(balanceNotices(1, 3, 2, false), { notices: [], armed: true }, "a grant above low_at re-arms");
  assert.equal(balanceNotices(1, 0, null, true), { notices: ["credits.depleted"], armed: true });
  assert.equal(balanceNotices(0, -1, null, true), { notices: [], armed: true }, "already depleted");
});

function account(grants: GrantState[], o: Partial<CreditAccountDoc> = {}): CreditAccountDoc {
  return {
    _id: "p|user:u",
    product_id: "p",
    owner: "user:u",
    grants: Object.fromEntries(grants.map((g) => [g.id, g])),
    overdraft_nano: 0,
    drawn: {},
    low_armed: true,
    low_at: null,
    version: 3,
    ops: {},
    notices: {},
    ...o,
  };
}

const CUT = new Date(0);
const need = (n: number) => [{ key: "1", end: D(86_400_000), needed: n * N }];

test("a period drawn from before credited spend was kept apart goes on by the rule then; others leave out what was spent without credits", () => {
  const end = D(86_400_000);
  // Spend $8, of which $5 without credits; allowance 0: $3 by the rule now, $8 by the rule before.
  const needs = [{ key: "1", end, needed: 3 * N, legacy: 8 * N }];
  const fresh = new AccountChange(account([grant("g", 20)]), "p", "user:u", D(0));
  fresh.settle(needs, CUT);
  const after = fresh.write()!.after;
  assert.equal(after.drawn["1"], { n: 3 * N, end, c: 1 }, "a new entry: what was spent with credits");
  const old = new AccountChange(account([grant("g", 20)], { drawn: { "1": { n: 6 * N, end } } }), "p", "user:u", D(0));
  old.settle(needs, CUT);
  const legacy = old.write()!.after;
  assert.equal(legacy.drawn["1"], { n: 8 * N, end }, "an entry from before keeps the rule it began with");
  assert.is(legacy.grants.g!.remaining_nano, 18 * N);
});

test("settle draws only what the period needs beyond what it drew: repeating it draws nothing", () => {
  const c = new AccountChange(account([grant("g", 1)]), "p", "user:u", D(0));
  c.settle(need(0.4), CUT);
  const w = c.write()!;
  assert.is(w.version, 3);
  assert.is(w.after.grants.g!.remaining_nano, 0.6 * N);
  assert.equal(w.after.drawn["1"]!.n, 0.4 * N);
  const again = new AccountChange(w.after, "p", "user:u", D(1));
  again.settle(need(0.4), CUT);
  assert.is(again.write(), null, "the same need again changes nothing");
  const lower = new AccountChange(w.after, "p", "user:u", D(1));
  lower.settle(need(0.1), CUT);
  assert.is(lower.write(), null, "draws never go back");
});

test("a grant whose id is \"__proto__\" stays an entry of the account through a change, and the read account is left as it was", () => {
  const base = account([grant("__proto__", 1), grant("g", 1, { priority: 60 })]);
  const c = new AccountChange(base, "p", "user:u", D(0));
  c.settle(need(1.5), CUT);
  const w = c.write()!;
  assert.equal(Object.keys(w.after.grants).sort(), ["__proto__", "g"]);
  assert.ok(Object.hasOwn(w.after.grants, "__proto__"));
  assert.is(Object.getPrototypeOf(w.after.grants), Object.prototype);
  assert.is(w.after.grants["__proto__"]!.remaining_nano + w.after.grants.g!.remaining_nano, 0.5 * N);
  assert.is(base.grants["__proto__"]!.remaining_nano, N, "the account read is not changed");
  assert.ok(w.after.grants.g!.effective_at instanceof Date && w.after.grants.g!.effective_at !== base.grants.g!.effective_at);
});

test("two moves out of one period that read its spend after both left each hand over only what their own events took", () => {
  // The period drew $3 (allowance 0); two lists' moves ($1 and $2 of it) ran together and both read a spend of 0 left.
  const base = account([grant("g", 10)]);
  const drawn = new AccountChange(base, "p", "user:u", D(0));
  drawn.settle(need(3), CUT);
  let a = drawn.write()!.after;
  const to = (cost: number) => [{ key: "2", end: D(2 * 86_400_000), cost: cost * N, credited: cost * N }];
  for (const [job, cost] of [["mv_a", 1], ["mv_b", 2]] as const) {
    const c = new AccountChange(a, "p", "user:u", D(1));
    c.moveDrawn(job, { key: "1", end: D(86_400_000), spend: 0, uncredited: 0, allowance: 0 }, to(cost));
    a = c.write()?.after ?? a;
  }
  assert.is(a.drawn["1"]!.n, 0, "the old period keeps nothing of the moved events' draws");
  assert.is(a.drawn["2"]!.n, 3 * N, "the new period counts all of it as drawn: its next settle draws nothing again");
  const next = new AccountChange(a, "p", "user:u", D(2));
  next.settle([{ key: "2", end: D(2 * 86_400_000), needed: 3 * N }], CUT);
  assert.is(next.write(), null);
});

test("usage a replica with a lagging clock adds after its day was written out goes to the next hour: the ledger's sum stays the usage", () => {
  const day = Date.UTC(2026, 10, 15);
  const HOUR = 3_600_000;
  const ledger = new Map<string, number>();
  // One change as changeAccounts makes it: the draw, then what leaves for the ledger (written whole, by key).
  const change = (a: CreditAccountDoc, at: number, total: number) => {
    const c = new AccountChange(a, "p", "user:u", new Date(at));
    c.settle([{ key: "1", end: new Date(day + 30 * 24 * HOUR), needed: total * N }], CUT);
    for (const op of c.takeSettled().ops) ledger.set(`${op.hour}|${op.type}|${op.grant_id}`, op.amount_nano);
    return c.write()!.after;
  };
  let a = change(account([grant("g", 10)]), day + 23 * HOUR + 50 * 60_000, 1);
  // A correct clock past the day's end (and the 5 minutes kept for lagging clocks): the day is written out.
  a = change(a, day + 24 * HOUR + 6 * 60_000, 2);
  assert.equal([...ledger.values()], [-1 * N], "the day's entry written out");
  // A replica 8 minutes behind: its hour is in the day written out.
  a = change(a, day + 24 * HOUR - 2 * 60_000, 3);
  assert.equal(Object.values(a.ops).map((o) => [o.hour, o.amount_nano]), [[day + 24 * HOUR, -2 * N]], "summed into the first hour after that day");
  change(a, day + 48 * HOUR + 6 * 60_000, 3);
  assert.is([...ledger.values()].reduce((x, y) => x + y, 0), -3 * N, "ledger usage = usage");
});

test("settle past the balance makes an overdraft; the next grant pays it first; ledger sums equal usage", () => {
  const c = new AccountChange(account([grant("g", 1)]), "p", "user:u", D(0));
  c.settle(need(1.5), CUT);
  const a = c.write()!.after;
  assert.is(a.overdraft_nano, 0.5 * N);
  assert.is(a.grants.g!.final, "depleted");
  const ops = Object.values(a.ops);
  assert.is(ops.reduce((s, o) => s + o.amount_nano, 0), -1.5 * N, "usage + overdraft entries = usage");
  const add = new AccountChange(a, "p", "user:u", D(1));
  add.addGrant(grant("h", 2), CUT);
  const b = add.write()!.after;
  assert.is(b.overdraft_nano, 0);
  assert.is(b.grants.h!.remaining_nano, 1.5 * N);
  assert.is(balanceOf(Object.values(b.grants), b.overdraft_nano, NOW + 1).balance, 1.5 * N);
});

/** An overdraft of $0.50 made at NOW (a $1 grant, $1.50 of usage), then `pending` posted at NOW + 1 ms. */
function overdrawnThenPosted(pending: GrantState): CreditAccountDoc {
  const c = new AccountChange(account([grant("g", 1)]), "p", "user:u", D(0));
  c.settle(need(1.5), CUT);
  const add = new AccountChange(c.write()!.after, "p", "user:u", D(1));
  add.addGrant(pending, CUT);
  const a = add.write()!.after;
  assert.is(a.overdraft_nano, 0.5 * N, "a grant not yet in effect pays nothing when posted");
  return a;
}

const recordOf = (g: GrantState): GrantRecordDoc => ({ _id: `p|user:u|${g.id}`, product_id: "p", owner: "user:u", grant_id: g.id, amount_nano: g.amount_nano, kind: g.kind, priority: g.priority, effective_at: g.effective_at, expires_at: g.expires_at, description: null, metadata: null, created_at: g.created_at, sent: "{}" });

test("a grant posted pending pays the overdraft once it takes effect, with nothing written then; its expiry takes only the rest", () => {
  const h = grant("h", 2, { effective_at: D(1_000), expires_at: D(2_000) });
  const a = overdrawnThenPosted(h);
  // In effect, not yet written: every answer reads the overdraft paid.
  const v = creditView(a, null, D(1_500));
  assert.equal([v.balance, v.overdraft, v.expiries[0]!.remaining], [1.5 * N, 0, 1.5 * N]);
  assert.is(grantMessage(recordOf(h), a, D(1_500)).remaining, 1.5);
  // Expired before any write: the rest expires, the payment stands.
  const c = new AccountChange(a, "p", "user:u", D(3_000));
  assert.is(c.expireDue(), 1);
  const b = c.write()!.after;
  assert.equal([b.overdraft_nano, b.overdraft_since, b.grants.h!.lost_nano], [0, undefined, 1.5 * N]);
  assert.is(balanceOf(Object.values(b.grants), b.overdraft_nano, NOW + 3_000).balance, 0);
  assert.equal(Object.values(b.ops).filter((o) => o.type === "expiry").map((o) => o.amount_nano), [-1.5 * N]);
  assert.equal(Object.values(b.notices).filter((n) => n.type === "credits.expired").map((n) => n.amount_nano), [1.5 * N]);
});

test("a void after a pending grant took effect takes what the overdraft left of it", () => {
  const a = overdrawnThenPosted(grant("h", 2, { effective_at: D(1_000) }));
  const c = new AccountChange(a, "p", "user:u", D(1_500));
  assert.ok(c.voidGrant("h"));
  const b = c.write()!.after;
  assert.equal([b.overdraft_nano, b.grants.h!.lost_nano], [0, 1.5 * N]);
});

test("a grant that expired before the overdraft arose pays none of it, even when its expiry was not yet written", () => {
  const c = new AccountChange(account([grant("x", 1, { effective_at: D(-2_000), expires_at: D(-1_000) })]), "p", "user:u", D(0));
  c.settle(need(1), CUT);
  const a = c.write()!.after;
  assert.equal([a.overdraft_nano, a.overdraft_since], [N, NOW]);
  const e = new AccountChange(a, "p", "user:u", D(10));
  e.expireDue();
  const b = e.write()!.after;
  assert.equal([b.overdraft_nano, b.grants.x!.lost_nano], [N, N]);
  assert.is(creditView(b, null, D(10)).balance, -N);
});

test("with credits disabled a grant that takes effect pays no overdraft: it waits for them to be enabled", () => {
  const a = overdrawnThenPosted(grant("h", 2, { effective_at: D(1_000) }));
  const off = { ...a, credits_enabled: false };
  assert.equal([creditView(off, null, D(1_500)).overdraft, creditView(off, null, D(1_500)).balance], [0.5 * N, 1.5 * N]);
  assert.is(creditView(a, null, D(1_500)).overdraft, 0);
});

test("an account from before the overdraft's moment was kept: its next write keeps it, and grants in effect since pay", () => {
  const { overdraft_since: _, ...old } = overdrawnThenPosted(grant("h", 2, { effective_at: D(1_000), expires_at: D(2_000) }));
  assert.is(creditView(old, null, D(1_500)).overdraft, 0.5 * N, "nothing known of when it arose: unpaid, as before");
  const more = new AccountChange(old, "p", "user:u", D(10));
  more.settle(need(1.6), CUT);
  const a = more.write()!.after;
  assert.equal([a.overdraft_nano, a.overdraft_since], [0.6 * N, NOW + 10]);
  const e = new AccountChange(a, "p", "user:u", D(3_000));
  e.expireDue();
  const b = e.write()!.after;
  assert.equal([b.overdraft_nano, b.grants.h!.lost_nano], [0, 1.4 * N]);
});

test("a grant posted later with an earlier effective_at takes over nothing a grant in effect before it paid", () => {
  const a = overdrawnThenPosted(grant("b", 2, { effective_at: D(1_000), expires_at: D(5_000), created_at: D(1) }));
  const add = new AccountChange(a, "p", "user:u", D(3_000));
  add.addGrant(grant("n", 2, { effective_at: D(-500), created_at: D(3_000) }), CUT);
  const after = add.write()!.after;
  assert.equal([after.grants.b!.remaining_nano, after.grants.n!.remaining_nano, after.overdraft_nano], [1.5 * N, 2 * N, 0]);
});

test("credits enabled again: grants that took effect while they were off paid nothing; disabled later: what was paid stands", () => {
  const h = grant("h", 2, { effective_at: D(1_000), expires_at: D(2_000) });
  const off = new AccountChange(overdrawnThenPosted(h), "p", "user:u", D(2), undefined, false);
  off.settle(need(1.5), CUT);
  const disabled = { ...off.doc, version: 5 };
  // Enabled again after h took effect and expired: h paid nothing, and its expiry takes it all.
  const on = new AccountChange(disabled, "p", "user:u", D(3_000), undefined, true);
  on.expireDue();
  const b = on.write()!.after;
  assert.equal([b.overdraft_nano, b.grants.h!.lost_nano, b.overdraft_since], [0.5 * N, 2 * N, NOW + 3_000]);
  // In effect while enabled, then voided with credits off: it paid when it took effect.
  const paid = overdrawnThenPosted(grant("k", 2, { effective_at: D(1_000) }));
  const v = new AccountChange(paid, "p", "user:u", D(1_500), undefined, false);
  assert.ok(v.voidGrant("k"));
  const c = v.write()!.after;
  assert.equal([c.overdraft_nano, c.grants.k!.lost_nano], [0, 1.5 * N]);
});

test("a write decides credits.low and credits.depleted once, named after the account version", () => {
  const c = new AccountChange(account([grant("g", 1)]), "p", "user:u", D(0), 0.5);
  c.settle(need(0.6), CUT);
  const a = c.write()!.after;
  assert.equal(Object.values(a.notices).map((n) => n.id), ["credits.low:user:u:4"]);
  assert.is(a.low_armed, false);
  const d = new AccountChange({ ...a, notices: {} }, "p", "user:u", D(1), 0.5);
  d.settle(need(1), CUT);
  assert.equal(Object.values(d.write()!.after.notices).map((n) => n.type), ["credits.depleted"], "low not again while disarmed");
});

test("expiry takes the remainder, writes an expiry entry and announces it; a void takes what is left", () => {
  const c = new AccountChange(account([grant("x", 1, { expires_at: D(-1) }), grant("v", 2)]), "p", "user:u", D(0));
  assert.is(c.expireDue(), 1);
  assert.ok(c.voidGrant("v"));
  assert.not.ok(c.voidGrant("v"), "a second void changes nothing");
  const a = c.write()!.after;
  assert.equal([a.grants.x!.final, a.grants.x!.lost_nano, a.grants.v!.final, a.grants.v!.lost_nano], ["expired", N, "voided", 2 * N]);
  assert.equal(Object.values(a.ops).map((o) => [o.type, o.amount_nano]).sort(), [["expiry", -N], ["void", -2 * N]]);
  assert.equal(Object.values(a.notices).map((n) => n.type).sort(), ["credits.depleted", "credits.expired"]);
});


test("a member of a team with a pool: own grants first, the rest handed over (no overdraft); the pool takes a total once", () => {
  const closed = D(-10 * 86_400_000);
  const end = D(20 * 86_400_000);
  const member = new AccountChange(null, "p", "user:ann", D(0));
  member.addGrant(grant("own", 0.5), closed);
  member.settle([{ key: "1", end, needed: 0.8 * N }], closed, true);
  assert.equal([member.doc.grants.own!.remaining_nano, member.doc.overdraft_nano, member.doc.spilled?.["1"]?.n], [0, 0, 0.3 * N]);
  // The same need again: nothing drawn, nothing more handed over.
  member.settle([{ key: "1", end, needed: 0.8 * N }], closed, true);
  assert.is(member.doc.spilled?.["1"]?.n, 0.3 * N);

  const pool = new AccountChange(null, "p", "team:acme", D(0));
  pool.addGrant(grant("pool", 1), closed);
  pool.receive("user:ann|1", 0.3 * N, end, "9", end);
  pool.receive("user:ann|1", 0.3 * N, end, "9", end);
  pool.receive("user:bob|1", 0.4 * N, end, "9", end);
  assert.is(pool.doc.pooled?.["9"]?.n, 0.7 * N);
  // A team allowance of 0.2 pays first, the pool the rest.
  pool.settle([{ key: "9", end, needed: needed(pool.doc.pooled!["9"]!.n, 0.2 * N) }], closed);
  assert.is(pool.doc.grants.pool!.remaining_nano, 0.5 * N);
});

test.run();
