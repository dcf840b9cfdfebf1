// Which team an event counts for, and what it adds there: pure, from a user's membership history
// and its teams' subscriptions as the plans service gives them.
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { KnownTeam, KnownUser, PlanInfo } from "../adapters/plans.ts";
import { attributeTeam, membershipAt, teamAt } from "../domain/attribution.ts";
import { limit, plan } from "../testing/plans.ts";
import { addTeamShare, inPeriodWindow, memberPrefix, teamShare } from "./shares.ts";
import { earlierCounterId, windowsWithCounter } from "./view.ts";

const at = (iso: string) => new Date(iso);
function team(id: string, p: PlanInfo | null, from = "2026-03-01T00:00:00Z"): KnownTeam {
  const subscriptions = p ? [{ planId: p.id, planName: p.name, periodStart: at(from), periodEnd: at("2026-04-01T00:00:00Z"), effectiveAt: at("2026-02-20T00:00:00Z") }] : [];
  return { id, externalTeamId: `ext-${id}`, name: id, subscriptions, plans: new Map(p ? [[p.id, p]] : []) };
}

function member(memberships: [string | null, string][], teams: KnownTeam[]): KnownUser {
  return {
    id: "u",
    externalUserId: "u",
    subscriptions: [],
    plans: new Map(),
    memberships: memberships.map(([teamId, t]) => ({ teamId, effectiveAt: at(t) })),
    teams: new Map(teams.map((x) => [x.id, x])),
  };
}

test("the team of an event is the membership entry in force at its timestamp: none before joining or after leaving", () => {
  const history = [
    { teamId: "a", effectiveAt: at("2026-03-05T00:00:00Z") },
    { teamId: "b", effectiveAt: at("2026-03-10T00:00:00Z") },
    { teamId: null, effectiveAt: at("2026-03-20T00:00:00Z") },
  ];
  assert.is(membershipAt(history, at("2026-03-04T23:59:59Z")), null);
  assert.is(membershipAt(history, at("2026-03-05T00:00:00Z")), "a");
  assert.is(membershipAt(history, at("2026-03-09T23:59:59Z")), "a", "a late event stamped before the move stays with the old team");
  assert.is(membershipAt(history, at("2026-03-10T00:00:00Z")), "b");
  assert.is(membershipAt(history, at("2026-03-25T00:00:00Z")), null);
  assert.is(membershipAt([], at("2026-03-25T00:00:00Z")), null);
});

test("a team counts only with a plan; its counter is keyed by the team's service id and its own period", () => {
  const p = plan("tp");
  const u = member([["a", "2026-03-01T00:00:00Z"], ["bare", "2026-03-15T00:00:00Z"]], [team("a", p, "2026-03-02T00:00:00Z"), team("bare", null)]);
  const a = attributeTeam("prod", u, at("2026-03-10T00:00:00Z"))!;
  assert.equal([a.team.id, a.plan.id, a.period.start.toISOString(), a.counterId], ["a", "tp", "2026-03-02T00:00:00.000Z", "prod|2026-03-02T00:00:00.000Z|a"]);
  assert.is(attributeTeam("prod", u, at("2026-03-16T00:00:00Z")), null, "a team without a plan counts nothing");
  assert.is(attributeTeam("prod", undefined, at("2026-03-16T00:00:00Z")), null);
});

test("an event's team share: team-scope windows for the team's document, member-scope ones prefixed for the member's, the team plan's model name", () => {
  const p = plan("tp", [limit("daily", { metric: "requests", max: 100 }), limit("seat", { window: "period", scope: "member" }), limit("gpt", { metric: "tokens", max: 10, model: "gpt-4o", scope: "team" })], { "gpt-4o": { input: 1, output: 1 } });
  const u = member([["a", "2026-03-01T00:00:00Z"]], [team("a", p)]);
  const a = attributeTeam("prod", u, at("2026-03-10T12:00:00Z"))!;
  const e = { timestamp: at("2026-03-10T12:00:00Z"), model: "gpt-4o-2024-08-06", input_tokens: 3, output_tokens: 2, cost_total: 0.25 };
  const { team: share, member: own } = teamShare(a, e, "gpt-4o-2024-08-06", at("2026-03-10T12:00:01Z"));
  assert.equal([share.id, share.counter_id, share.model, share.spend_limit], ["a", a.counterId, "gpt-4o", 1], "the team plan names the model its own way");
  assert.equal(share.windows!.map((w) => [w.key, w.n]), [
    [`requests:day::|${Date.parse("2026-03-10T00:00:00Z")}`, 1],
    [`tokens:day::gpt-4o|${Date.parse("2026-03-10T00:00:00Z")}`, 5],
  ]);
  assert.equal(own!.map((w) => [w.key, w.n]), [[`${memberPrefix("a")}spend:period::|${Date.parse("2026-03-01T00:00:00Z")}`, 250_000_000]]);

  const doc: Parameters<typeof addTeamShare>[0] = { ...e, windows: [{ key: "spend:day::|0", end: 1, n: 1 }] };
  addTeamShare(doc, a, "gpt-4o-2024-08-06", at("2026-03-10T12:00:01Z"));
  assert.equal(doc.windows!.map((w) => w.key), ["spend:day::|0", own![0]!.key], "the member's own windows first, then its team's member-scope ones");
  const none: Parameters<typeof addTeamShare>[0] = { ...e };
  addTeamShare(none, null, "x", at("2026-03-10T12:00:01Z"));
  assert.equal(none, { ...e }, "no team: the event is as without teams");
});

test("a team window within the event's period is counted in the period counter; rolling ones and those crossing its bounds in the window document", () => {
  const [start, end] = [at("2026-03-01T00:00:00Z"), at("2026-04-01T00:00:00Z")];
  const day = Date.parse("2026-03-10T00:00:00Z");
  const share = (key: string, e: number) => ({ key, end: e, n: 1 });
  assert.ok(inPeriodWindow(share(`spend:day::|${day}`, day + 86_400_000), start, end));
  assert.ok(inPeriodWindow(share(`spend:period::|${start.getTime()}`, end.getTime()), start, end));
  // A day in New York starts at 05:00 UTC: the first one of the period began before it.
  const first = Date.parse("2026-02-28T05:00:00Z");
  assert.not.ok(inPeriodWindow(share(`spend:day::|${first}`, first + 86_400_000), start, end));
  const last = Date.parse("2026-03-31T04:00:00Z");
  assert.not.ok(inPeriodWindow(share(`spend:day::|${last}`, last + 86_400_000), start, end));
  assert.not.ok(inPeriodWindow(share(`spend:rolling:300:|${day}`, day + 300 * 60_000), start, end));
});

test("a team's windows read as one document: the window document's entries and its period counter's", () => {
  const counter = { _id: "c", product_id: "p", user_id: "t", w: { "spend:day::|1": { n: 4, e: 9 } } };
  assert.equal(windowsWithCounter(null, [counter, null])?.w, { "spend:day::|1": { n: 4, e: 9 } });
  const doc = { _id: "d", product_id: "p", user_id: "t", jobs: {}, w: { "spend:rolling:300:|1": { n: 2, e: 5 } } };
  assert.equal(windowsWithCounter(doc, [counter])?.w, { "spend:rolling:300:|1": { n: 2, e: 5 }, "spend:day::|1": { n: 4, e: 9 } });
  // A period that began within a window: the earlier period's counter holds its count before.
  const earlier = { ...counter, _id: "c0", w: { "spend:day::|1": { n: 3, e: 9 } } };
  assert.equal(windowsWithCounter(doc, [counter, earlier])?.w?.["spend:day::|1"], { n: 7, e: 9 });
  assert.is(windowsWithCounter(doc, [{ ...counter, w: undefined }, null]), doc);
  assert.is(windowsWithCounter(null, [null, null]), null);
});

test("a team's view reads the earlier period's counter only while a team window live now began in that period", () => {
  const p = plan("tp", [limit("daily", { scope: "team" })]);
  const t = team("a", p);
  // A new subscription began a new period mid-day: the day's count before it is in the earlier counter.
  t.subscriptions.push({ planId: p.id, planName: p.name, periodStart: at("2026-03-10T12:00:00Z"), periodEnd: at("2026-04-10T12:00:00Z"), effectiveAt: at("2026-03-10T12:00:00Z") });
  const now = at("2026-03-10T15:00:00Z");
  const a = teamAt("prod", t, now)!;
  assert.is(a.counterId, "prod|2026-03-10T12:00:00.000Z|a");
  assert.is(earlierCounterId("prod", a, now), "prod|2026-03-01T00:00:00.000Z|a");
  const nextDay = at("2026-03-11T01:00:00Z");
  assert.is(earlierCounterId("prod", teamAt("prod", t, nextDay)!, nextDay), null, "the day began within the period");
  const rolling = team("r", plan("rp", [limit("five-hours", { scope: "team", window: "rolling", duration_minutes: 300 })]));
  assert.is(earlierCounterId("prod", teamAt("prod", rolling, at("2026-03-01T01:00:00Z"))!, at("2026-03-01T01:00:00Z")), null, "rolling windows are in the window document");
});

test.run();
