// The library's state of a team (pure, time given): one team entry per team id shared by every
// member the process serves, a member's call counted for the member, the team's sums and
// windows and the member's own team windows; members' views merged into the team as a user's
// are (larger in the same period, the service's on a new one, an older period's ignored);
// reservations held on the team; a member with no plan of its own priced at the team's rates.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LimitExceededError } from "../src/errors.ts";
import { evaluate } from "../src/gates.ts";
import { limitBody, retryAfterSeconds } from "../src/http/limit-response.ts";
import { UserEntry } from "../src/state.ts";
import { Teams } from "../src/team-state.ts";
import type { GuardResult, LimitStatus, PlanConfig, PlanLimit, SessionView, TeamView } from "../src/types.ts";

const t = suite("sdk: a team in the library's state");

const NOW = Date.parse("2026-11-28T20:00:00Z");
const USER_PERIOD = { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" };
const TEAM_PERIOD = { start: "2026-11-15T00:00:00.000Z", end: "2026-12-15T00:00:00.000Z" };

function plan(more: Partial<PlanConfig> = {}): PlanConfig {
  return {
    max_spend_per_period: null, max_spend_per_session: null, soft_gate_at: 0.8, hard_gate_at: 1, model_limits: {},
    cost_rates: {}, session_timeout_minutes: 30, default_cost_rate: null, tool_costs: {}, default_tool_cost: 0,
    pre_call_estimate: false, pre_call_buffer_tokens: 100, limits: [], time_zone: "UTC", ...more,
  };
}

const seat: PlanLimit = { name: "seat", metric: "spend", max: 0.4, window: "period", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null, scope: "member" };
const teamPlan = plan({ max_spend_per_period: 1, limits: [seat], cost_rates: { "gpt-4o": { input: 2.5, output: 10 } } });

function teamView(more: Partial<TeamView> = {}, periodCost = 0): TeamView {
  return {
    team_id: "acme", service_team_id: "t1", plan: "team", plan_id: "p-team", plan_config: teamPlan,
    current_usage: { period_cost: periodCost, period_tokens_total: 0, period_tokens_by_model: {}, period_cost_by_model: {} },
    billing_period: TEAM_PERIOD, ...more,
  };
}

/** A member's session view: its own plan (null: none of its own), the team block, and the member's figures of scope-member limits. */
function view(userId: string, own: PlanConfig | null, team: TeamView | null, limits: Partial<LimitStatus>[] = []): SessionView {
  return {
    user_id: userId, service_user_id: `s-${userId}`, plan: own ? "own" : "none", plan_id: own ? "p-own" : null, sdk_enabled: own !== null || team !== null,
    plan_config: own ?? plan(),
    current_usage: { period_cost: 0, period_tokens_total: 0, period_tokens_by_model: {}, period_cost_by_model: {} },
    billing_period: USER_PERIOD, limits: limits as LimitStatus[], team,
  };
}

function member(teams: Teams, userId: string, own: PlanConfig | null = null, team: TeamView | null = teamView(), limits: Partial<LimitStatus>[] = []): UserEntry {
  const e = new UserEntry(userId, NOW);
  e.apply(view(userId, own, team, limits), NOW, 60_000, teams);
  return e;
}

/** The check before a call (what admission asks), with an estimate when given. */
function gate(e: UserEntry, now = NOW, estimateCost = 0, model: string | null = null): GuardResult {
  e.advanceWindows(now);
  const session = e.sessions.at(undefined, now, e.timeoutMs);
  return evaluate(e.config, {
    periodCost: e.periodCost + e.reservedCost, sessionCost: session.cost, model, modelTokens: 0, estimateCost, estimateTokens: 0,
    periodEnd: e.periodEndMs, sessionEnd: null, counters: e.counters,
  }, e.teamGate(model));
}

function call(e: UserEntry, cost: number, at = NOW): void {
  e.count(e.sessions.at(undefined, at, e.timeoutMs), null, 0, cost, at);
}

t("members share one team entry: two members' calls spend the team's cap and the third member is blocked on team:total_spend", () => {
  const teams = new Teams();
  const [a, b, c] = ["a", "b", "c"].map((id) => member(teams, id));
  assert.is(a!.team, b!.team);
  assert.is(teams.size, 1);
  call(a!, 0.35);
  call(b!, 0.35);
  call(a!, 0.3);
  assert.is(a!.team!.periodCost, 1);
  const blocked = gate(c!);
  assert.equal([blocked.status, blocked.gate_reason, blocked.resets_at], ["hard_gate", "team:total_spend", TEAM_PERIOD.end]);
  assert.is(blocked.message, "Team spend limit reached: $1.0000 of $1.00 spent (100%)");
  assert.equal(c!.snapshot(NOW).team?.period_cost, 1);
});

t("a member-scope cap counts each member apart: one member at $0.40 is blocked, the others go on", () => {
  const teams = new Teams();
  const a = member(teams, "a");
  const b = member(teams, "b");
  call(a, 0.4);
  call(b, 0.1);
  assert.equal([gate(a).status, gate(a).gate_reason], ["hard_gate", "team:limit:seat"]);
  assert.is(gate(a).message, 'Member limit "seat" of the team reached: $0.4000 of $0.40 spent this period (100%)');
  assert.is(gate(b).status, "ok");
  assert.is(a.team!.periodCost, 0.5);
});

t("a member's own plan cap still applies under a team with room", () => {
  const teams = new Teams();
  const a = member(teams, "a", plan({ max_spend_per_period: 0.2 }));
  call(a, 0.2);
  const r = gate(a);
  assert.equal([r.status, r.gate_reason, r.resets_at], ["hard_gate", "total_spend", USER_PERIOD.end]);
});

t("a member with no plan of its own is priced at the team plan's rates and has no caps of its own", () => {
  const teams = new Teams();
  const a = member(teams, "a");
  assert.equal(a.config?.cost_rates, teamPlan.cost_rates);
  assert.is(a.config?.max_spend_per_period, null);
  assert.equal(a.config?.limits, []);
  assert.is(a.model("gpt-4o-2024-08-06"), "gpt-4o");
  const own = member(teams, "b", plan({ cost_rates: { claude: { input: 3, output: 15 } } }));
  assert.equal(own.config?.cost_rates, { claude: { input: 3, output: 15 } });
});

t("members' views merge into the team: the larger in the same period, the service's on a new period, an older period's ignored", () => {
  const teams = new Teams();
  const a = member(teams, "a", null, teamView({}, 0.3));
  const team = a.team!;
  call(a, 0.2);
  assert.is(team.periodCost, 0.5);
  // Another member's view of the same period: the service has seen less than this process: local kept.
  member(teams, "b", null, teamView({}, 0.4));
  assert.is(team.periodCost, 0.5);
  // ... and more: the service's (other processes' calls).
  member(teams, "c", null, teamView({}, 0.7));
  assert.is(team.periodCost, 0.7);
  // A new period: the service's figure whole.
  const next = { start: "2026-12-15T00:00:00.000Z", end: "2027-01-15T00:00:00.000Z" };
  member(teams, "d", null, teamView({ billing_period: next }, 0.05));
  assert.equal([team.periodCost, team.periodStart], [0.05, next.start]);
  // A member's view still of the old period arrives late: nothing of it is taken.
  member(teams, "e", null, teamView({}, 0.9));
  assert.equal([team.periodCost, team.periodStart], [0.05, next.start]);
});

t("a view's member-scope figure goes to the member's counter, a team-scope one to the team's", () => {
  const pool: PlanLimit = { name: "pool", metric: "spend", max: 0.6, window: "period", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null, scope: "team" };
  const tv = teamView({ plan_config: plan({ limits: [seat, pool] }) });
  const teams = new Teams();
  const limits = [
    { reason: "team:limit:seat", name: "seat", scope: "member", used: 0.4, window_start: TEAM_PERIOD.start },
    { reason: "team:limit:pool", name: "pool", scope: "team", used: 0.25, window_start: TEAM_PERIOD.start },
  ];
  const a = member(teams, "a", null, tv, limits);
  const b = member(teams, "b", null, tv, [{ ...limits[0]!, used: 0 }, limits[1]!]);
  assert.is(a.memberCounters[0]!.used, 400_000_000);
  assert.is(b.memberCounters[0]!.used, 0);
  assert.is(a.team!.counters[1]!.used, 250_000_000);
  assert.is(gate(a).gate_reason, "team:limit:seat");
  assert.is(gate(b).status, "ok");
  call(b, 0.35);
  // b's spend fills the team's pool (0.25 + 0.35) while b's own seat has room.
  assert.is(gate(b).gate_reason, "team:limit:pool");
  assert.is(b.memberCounters[0]!.used, 350_000_000);
  // a: both at 100%, ending together: list order names the seat.
  assert.is(gate(a).gate_reason, "team:limit:seat");
});

t("a reservation holds on the team: another member's check sees it, and it is given back on release", () => {
  const teams = new Teams();
  const a = member(teams, "a");
  const b = member(teams, "b");
  call(a, 0.7);
  const session = a.sessions.at(undefined, NOW, a.timeoutMs);
  const held = { session, model: null, cost: 0.3, tokens: 0 };
  a.hold(held);
  assert.is(a.team!.reservedCost, 0.3);
  assert.equal([gate(b).status, gate(b).gate_reason], ["hard_gate", "team:total_spend"]);
  // The member's own scope-member window holds it too.
  assert.is(a.memberCounters[0]!.held, 300_000_000);
  a.unhold(held);
  assert.is(a.team!.reservedCost, 0);
  assert.is(a.memberCounters[0]!.held, 0);
  assert.is(gate(b).status, "ok");
  // With an estimate (pre_call_estimate), a call that would take the team past its cap is blocked.
  assert.is(gate(b, NOW, 0.31).status, "hard_gate");
  // One that lands exactly on it runs.
  assert.is(gate(b, NOW, 0.3).status, "soft_gate");
});

t("a team plan changed by another member's view: this member's counters follow it by what they count", () => {
  const teams = new Teams();
  const a = member(teams, "a");
  call(a, 0.3);
  const renamed: PlanLimit = { ...seat, name: "per_seat", max: 0.5 };
  member(teams, "b", null, teamView({ plan_config: plan({ max_spend_per_period: 1, limits: [renamed] }) }));
  const r = gate(a);
  assert.is(a.memberCounters[0]!.used, 300_000_000);
  assert.is(r.status, "ok");
  call(a, 0.2);
  assert.is(gate(a).gate_reason, "team:limit:per_seat");
});

t("leaving the team: no team dimensions; the team entry is dropped once no cached member names it", () => {
  const teams = new Teams();
  const a = member(teams, "a");
  call(a, 0.4);
  assert.is(gate(a).gate_reason, "team:limit:seat");
  a.apply(view("a", null, null), NOW, 60_000, teams);
  assert.is(a.team, null);
  assert.is(a.config, null);
  assert.is(gate(a).status, "ok");
  teams.sweep([a]);
  assert.is(teams.size, 0);
});

t("a blocked member's error and 429 body name the team's dimension and its reset", () => {
  const teams = new Teams();
  const a = member(teams, "a");
  call(a, 0.4);
  const err = new LimitExceededError(gate(a));
  assert.is(err.reason, "team:limit:seat");
  assert.is(err.resetsAt?.toISOString(), TEAM_PERIOD.end);
  const body = limitBody(err);
  assert.equal([body.gate_reason, body.current_value, body.limit_value, body.resets_at], ["team:limit:seat", 0.4, 0.4, TEAM_PERIOD.end]);
  assert.is(body.detail, 'Member limit "seat" of the team reached: $0.4000 of $0.40 spent this period (100%)');
  assert.is(retryAfterSeconds(err, NOW), (Date.parse(TEAM_PERIOD.end) - NOW) / 1000);
});

t.run();
