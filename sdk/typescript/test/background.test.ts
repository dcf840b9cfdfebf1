// The unread bound of background responses (src/integrations/background.ts): a call whose
// response is not read back within MAX_UNREAD_MS is settled with its estimate, and a later read
// adds nothing.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { BackgroundCalls, MAX_UNREAD_MS, type BackgroundRoute } from "../src/integrations/background.ts";
import type { MeteredCall, Usage } from "../src/integrations/metering.ts";

const route: BackgroundRoute = {
  pending: (d) => (d.status === "queued" ? d.id : undefined),
  readOf: (_method, path) => /^\/responses\/([^/]+)$/.exec(path)?.[1],
  final: (r) => (r.status === "completed" ? (r.usage as Usage) : undefined),
  finalOf: () => undefined,
};

/** What BackgroundCalls asks of a call, and how it was settled. */
function fakeCall() {
  const seen: unknown[] = [];
  const call = {
    seen,
    settled: false,
    settle: () => void (call.settled || (seen.push("estimate"), (call.settled = true))),
    commit: (u: Usage) => void (call.settled || (seen.push(u), (call.settled = true))),
    release: () => void (call.settled || (seen.push("released"), (call.settled = true))),
  };
  return call;
}

/** An APIPromise's one method the reads use, resolving to `data`. */
const answer = (data: unknown) => ({ _thenUnwrap: (f: (d: unknown) => unknown) => Promise.resolve(f(data)) });

test("a response unread past the bound is settled with its estimate; reading it later counts nothing more", async () => {
  const calls = new BackgroundCalls(route);
  const old = fakeCall();
  const young = fakeCall();
  assert.ok(calls.holdPending({ id: "old", status: "queued" }, old as unknown as MeteredCall));
  assert.ok(calls.holdPending({ id: "young", status: "queued" }, young as unknown as MeteredCall));
  calls.sweep(Date.now() + MAX_UNREAD_MS - 60_000);
  assert.equal([old.seen, young.seen], [[], []]);

  calls.sweep(Date.now() + MAX_UNREAD_MS);
  assert.equal([old.seen, young.seen], [["estimate"], ["estimate"]]);
  assert.is(calls.size, 0);
  const usage: Usage = { input_tokens: 5, output_tokens: 7, tool_calls: [] };
  await calls.read("get", "/responses/old", answer({ id: "old", status: "completed", usage }));
  assert.equal(old.seen, ["estimate"], "read after the bound: nothing more");
});

test("a response read final settles its call once; one not running is not held", async () => {
  const calls = new BackgroundCalls(route);
  const call = fakeCall();
  assert.not.ok(calls.holdPending({ id: "r", status: "completed" }, call as unknown as MeteredCall));
  assert.ok(calls.holdPending({ id: "r", status: "queued" }, call as unknown as MeteredCall));
  const usage: Usage = { input_tokens: 5, output_tokens: 7, tool_calls: [] };
  await calls.read("get", "/responses/r", answer({ id: "r", status: "queued" }));
  assert.equal(call.seen, [], "still running");
  await calls.read("get", "/responses/r", answer({ id: "r", status: "completed", usage }));
  await calls.read("get", "/responses/r", answer({ id: "r", status: "completed", usage }));
  assert.equal(call.seen, [usage]);
});

test.run();
