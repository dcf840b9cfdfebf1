import { test } from "uvu";
import * as assert from "uvu/assert";
import { computeDay, DayAccumulator, pick, shares, sumByKey, topUsers, type UsageEntry } from "./rollup.ts";
import { coveringDays, lookback, previous } from "./windows.ts";

test("lookback: whole UTC days, today included, ending at tomorrow 00:00", () => {
  const w = lookback(new Date("2026-03-10T23:59:59.999Z"), 3);
  assert.is(w.start.toISOString(), "2026-03-08T00:00:00.000Z");
  assert.is(w.end.toISOString(), "2026-03-11T00:00:00.000Z");
  assert.equal(w.days, ["2026-03-08", "2026-03-09", "2026-03-10"]);
  const p = previous(w);
  assert.equal([p.start.toISOString(), p.end.toISOString()], ["2026-03-05T00:00:00.000Z", "2026-03-08T00:00:00.000Z"]);
  assert.equal(p.days, ["2026-03-05", "2026-03-06", "2026-03-07"]);
  assert.equal(lookback(new Date("2026-03-11T00:00:00.000Z"), 1).days, ["2026-03-11"]);
  assert.equal(lookback(new Date("2024-03-01T12:00:00Z"), 2).days, ["2024-02-29", "2024-03-01"]);
});

test("coveringDays widens an explicit window to whole UTC days", () => {
  assert.equal(coveringDays(new Date("2026-03-02T00:00:00Z"), new Date("2026-03-03T00:00:00Z")).days, ["2026-03-02"]);
  assert.equal(coveringDays(new Date("2026-03-02T10:00:00Z"), new Date("2026-03-03T00:00:01Z")).days, ["2026-03-02", "2026-03-03"]);
});

test("computeDay folds facts per source, model (null as unknown) and user", () => {
  const usage: UsageEntry[] = [
    { u: "a", m: "x", s: "auto", t: 10, c: 1 },
    { u: "a", m: null, s: "manual", t: 0, c: 2 },
    { u: "b", m: "x", s: "auto", t: 5, c: 0.5 },
  ];
  const d = computeDay(usage, [{ u: "a", st: "soft_gate", b: false }, { u: "a", st: "hard_gate", b: true }]);
  assert.equal(d.usage, { auto: [1.5, 15, 2], manual: [2, 0, 1] });
  assert.equal([d.soft_gates, d.hard_gates], [1, 1]);
  assert.equal(d.models.map((m) => m.name), ["unknown", "x"]);
  assert.equal(d.users.find((u) => u.id === "a")!.figures, { auto: [1, 10, 1], manual: [2, 0, 1] });
  const manualUsers = sumByKey(d.users, (u) => u.id, (u) => u.figures, "manual");
  assert.equal([...manualUsers.keys()], ["a"]);
});

test("computeDay keeps users apart whatever their ids hold: bob in team t and a user named bob\\0t in none", () => {
  for (const usage of [
    [{ u: "bob", m: "x", s: "auto", t: 10, c: 1, tm: "t" }, { u: "bob\u0000t", m: "x", s: "auto", t: 5, c: 2 }],
    [{ u: "bob\u0000t", m: "x", s: "auto", t: 5, c: 2 }, { u: "bob", m: "x", s: "auto", t: 10, c: 1, tm: "t" }],
  ] as UsageEntry[][]) {
    const d = computeDay(usage, []);
    assert.equal(d.users.map((u) => [u.id, u.team, u.figures.auto[0]]), [["bob", "t", 1], ["bob\u0000t", undefined, 2]]);
  }
});

test("computeDay keeps each team's part: a user moved during the day has a row per team; a day rebuilt from its rows and totals is the same", () => {
  const usage: UsageEntry[] = [
    { u: "a", m: "x", s: "auto", t: 10, c: 0.1, tm: "t1" },
    { u: "a", m: "y", s: "auto", t: 20, c: 0.2, tm: "t2" },
    { u: "b", m: "x", s: "manual", t: 5, c: 0.3, tm: "t1" },
    { u: "c", m: "x", s: "auto", t: 1, c: 1 },
  ];
  const d = computeDay(usage, [{ u: "a", st: "hard_gate", b: true, tm: "t2" }, { u: "c", st: "soft_gate", b: false }]);
  assert.equal(d.usage.auto, [1.3, 31, 3]);
  assert.equal(d.users.map((u) => [u.id, u.team, u.figures.auto[0] + u.figures.manual[0]]), [["a", "t1", 0.1], ["a", "t2", 0.2], ["b", "t1", 0.3], ["c", undefined, 1]]);
  const [t1, t2] = d.teams!;
  assert.equal([t1!.id, t1!.figures.usage, t1!.figures.users.map((u) => u.id), t1!.figures.models.map((m) => m.name)], ["t1", { auto: [0.1, 10, 1], manual: [0.3, 5, 1] }, ["a", "b"], ["x"]]);
  assert.equal([t2!.id, t2!.figures.usage.auto, t2!.figures.hard_gates, t2!.figures.soft_gates], ["t2", [0.2, 20, 1], 1, 0]);
  // A frozen day's base: totals (its teams' included) and rows with their teams.
  const again = new DayAccumulator();
  again.addTotals(d);
  again.addTeamTotals(d.teams!);
  for (const u of d.users) again.addUser(u);
  assert.equal(again.result(), d);
});

test("shares: of cost, else of tokens, else of events; rounded to 2 decimals", () => {
  assert.equal(shares(new Map([["a", [1, 0, 1]], ["b", [2, 0, 1]]])).map((s) => s.pct), [66.67, 33.33]);
  assert.equal(shares(new Map([["a", [0, 1, 1]], ["b", [0, 3, 1]]])).map((s) => [s.model, s.pct]), [["b", 75], ["a", 25]]);
  assert.equal(shares(new Map([["a", [0, 0, 1]], ["b", [0, 0, 1]]])).map((s) => s.pct), [50, 50]);
  // The same exact share reads the same: 5/32 of the cost is 15.63 whether $5 of $32 or $0.205 of $1.312 (floats gave 15.62).
  assert.equal(shares(new Map([["a", [5, 0, 1]], ["b", [27, 0, 1]]])).find((s) => s.model === "a")!.pct, 15.63);
  assert.equal(shares(new Map([["a", [0.205, 0, 1]], ["b", [1.107, 0, 1]]])).find((s) => s.model === "a")!.pct, 15.63);
  // Exact however large: a billion dollars in nano-dollars times 10,000 passes 2^53.
  assert.equal(shares(new Map([["a", [1e9 / 3, 0, 1]], ["b", [(2 * 1e9) / 3, 0, 1]]])).map((s) => s.pct), [66.67, 33.33]);
  assert.equal(shares(new Map()), []);
});

test("topUsers: cost descending, then user id; limited", () => {
  const m = new Map<string, [number, number, number]>([["c", [1, 1, 1]], ["b", [2, 1, 1]], ["a", [2, 1, 1]]]);
  assert.equal(topUsers(m, 2).map((u) => u.userId), ["a", "b"]);
});

test("pick: one source's cost is exact at the nano-dollar, as both sources' sum is (a day rolled up as a float sum)", () => {
  const day = { auto: [0.1 + 0.2, 10, 2] as [number, number, number], manual: [0, 0, 0] as [number, number, number] };
  assert.equal(pick(day, "auto"), [0.3, 10, 2]);
  assert.equal(pick(day, undefined), [0.3, 10, 2]);
});


test("sumByKey leaves out a key whose days sum to nothing (events a late change moved out on a later day)", () => {
  const days = [
    { name: "a", figures: { auto: [5, 100, 2], manual: [0, 0, 0] } },
    { name: "b", figures: { auto: [1, 10, 1], manual: [0, 0, 0] } },
    { name: "a", figures: { auto: [-5, -100, -2], manual: [0, 0, 0] } },
  ] as { name: string; figures: { auto: [number, number, number]; manual: [number, number, number] } }[];
  assert.equal([...sumByKey(days, (d) => d.name, (d) => d.figures, undefined).keys()], ["b"]);
});

test.run();
