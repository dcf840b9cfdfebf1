// What a call reserves (pure): the user's typical call once known, else its estimate, which reads
// the request's output limit before the plan's buffer.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { RecentCalls } from "../src/recent-calls.ts";
import { reservationOf } from "../src/reservation.ts";

const t = suite("reservation");
const cost = (i: number, o: number) => i * 0.001 + o * 0.002;
const unread = () => {
  throw new Error("the input is not read for a typical call");
};

t("no history: the estimate, with the request's output limit before the buffer", () => {
  assert.equal(reservationOf(false, undefined, () => 100, undefined, 4096, cost), { cost: 100 * 0.001 + 4096 * 0.002, tokens: 4196, exact: false });
  assert.equal(reservationOf(false, undefined, () => 100, 50, 4096, cost), { cost: 100 * 0.001 + 50 * 0.002, tokens: 150, exact: false });
  assert.ok(reservationOf(true, undefined, () => 100, 50, 4096, cost).exact);
});

t("a typical call: the largest cost and tokens of the last eight; pre_call_estimate always estimates", () => {
  const recent = new RecentCalls();
  for (const [c, n] of [[0.5, 10], [0.2, 30], [0.1, 5]] as const) recent.add(c, n);
  assert.equal(reservationOf(false, recent, unread, undefined, 4096, cost), { cost: 0.5, tokens: 30, exact: false });
  for (let i = 0; i < 8; i++) recent.add(0.01, 1);
  assert.equal(reservationOf(false, recent, unread, undefined, 4096, cost), { cost: 0.01, tokens: 1, exact: false });
  assert.equal(reservationOf(true, recent, () => 0, 10, 4096, cost), { cost: 10 * 0.002, tokens: 10, exact: true });
});

t.run();
