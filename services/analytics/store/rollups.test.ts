import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { computeDay, DayAccumulator, type UsageEntry } from "../domain/rollup.ts";
import { BaseStore } from "./bases.ts";
import { productScope, teamScope, teamsScope } from "../domain/scopes.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";
import { RollupStore, versionOf, type DayDoc } from "./rollups.ts";

/**
 * A day's rollup in the real database: the product's, each team's and the teams' side by side,
 * each read by `_id` as the queries read them; a roll writes only the documents whose content
 * changed, and a day document's version changes exactly with its content.
 */
const t = suite<Replicas>("day rollups by scope");
withReplicas(t, "analytics_rollups");

const DAY = "2026-03-10";
const e = (u: string, c: number, tm?: string): UsageEntry => ({ u, m: "gpt-4o", s: "auto", t: 10, c, ...(tm !== undefined && { tm }) });

t("each team's day, the teams side by side, the product's; a second roll rewrites only what changed", async ({ db }) => {
  const store = new RollupStore(db);
  const p = randomUUID();
  const facts = [e("ann", 0.1, "a|1"), e("bob", 0.2, "a|1"), e("ann", 0.3, "b:2"), e("cy", 1)];
  await store.write(p, DAY, computeDay(facts, []), new Date());
  const read = async (scope: string): Promise<DayDoc | undefined> => (await store.readDays(scope, [DAY]))[0];
  const rows = async (doc: DayDoc) => {
    const out: unknown[] = [];
    await store.readUserRows(doc, (id, auto, _manual, team) => out.push([id, auto[0], team ?? null]));
    return out;
  };
  const a = (await read(teamScope(p, "a|1")))!;
  assert.equal([a.usage.auto, a.scope, await rows(a)], [[0.3, 20, 2], teamScope(p, "a|1"), [["ann", 0.1, null], ["bob", 0.2, null]]]);
  const b = (await read(teamScope(p, "b:2")))!;
  assert.equal([b.usage.auto, await rows(b)], [[0.3, 10, 1], [["ann", 0.3, null]]]);
  const teams = (await read(teamsScope(p)))!;
  assert.equal([teams.usage.auto, await rows(teams)], [[0.6, 30, 3], [["a|1", 0.3, null], ["b:2", 0.3, null]]]);
  const product = (await read(productScope(p)))!;
  assert.equal([product.usage.auto, product.scope, await rows(product)], [[1.6, 40, 4], undefined, [["ann", 0.1, "a|1"], ["ann", 0.3, "b:2"], ["bob", 0.2, "a|1"], ["cy", 1, null]]]);
  assert.is(await read(teamScope(p, "nobody")), undefined, "a team without events has no rollup");

  // The same day again with one more event of team b: a, untouched, keeps its version.
  await store.write(p, DAY, computeDay([...facts, e("dee", 0.05, "b:2")], []), new Date());
  assert.is(versionOf((await read(teamScope(p, "a|1")))!), versionOf(a), "an unchanged team is not rewritten");
  for (const [scope, before] of [[teamScope(p, "b:2"), b], [teamsScope(p), teams], [productScope(p), product]] as const) {
    assert.is.not(versionOf((await read(scope))!), versionOf(before), scope);
  }
  const b2 = (await read(teamScope(p, "b:2")))!;
  assert.equal(await rows(b2), [["ann", 0.3, null], ["dee", 0.05, null]]);

  // A chunk changed behind an unchanged day document (a writer cut off between the two) is
  // put right, and the day document rewritten with it.
  await db.collection("day_user_rollups").updateOne({ _id: `${teamScope(p, "a|1")}|${DAY}|0` as never }, { $set: { users: "[]", digest: "x" } });
  await store.write(p, DAY, computeDay([...facts, e("dee", 0.05, "b:2")], []), new Date());
  const a2 = (await read(teamScope(p, "a|1")))!;
  assert.is.not(versionOf(a2), versionOf(a));
  assert.equal(await rows(a2), [["ann", 0.1, null], ["bob", 0.2, null]]);
});

t("a frozen day's base keeps every team's figures, in chunks, and gives the day back whole", async ({ db }) => {
  const bases = new BaseStore(db);
  const p = randomUUID();
  // 450 teams: three chunks of teams; each with two members and a gate.
  const facts = Array.from({ length: 900 }, (_, i) => ({ ...e(`u${i}`, 0.001 * (1 + (i % 7)), `team ${i % 450}`), m: i % 3 ? "gpt-4o" : null }));
  const gates = Array.from({ length: 450 }, (_, i) => ({ u: `u${i}`, st: i % 2 ? "hard_gate" : "soft_gate", b: i % 2 === 1, tm: `team ${i}` }));
  const day = computeDay([...facts, e("solo", 1)], gates);
  assert.ok(await bases.freeze({ productId: p, day: DAY }, day, 0, new Date()));
  assert.is(await db.collection("day_base_users").countDocuments({ _id: { $regex: `^${p}\\|.*\\|t\\d+$` } as never }), 3);
  const acc = new DayAccumulator();
  await bases.addTo((await bases.read({ productId: p, day: DAY }))!, acc);
  assert.equal(acc.result(), day);
});

t.run();
