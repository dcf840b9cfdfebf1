import { test } from "uvu";
import * as assert from "uvu/assert";
import { stableUuid, validateSubscribedEvents } from "./events.ts";

test("subscription lists and stable ids", () => {
  assert.ok("error" in validateSubscribedEvents([]));
  assert.ok("error" in validateSubscribedEvents(["usage.threshold.50", "nope"]));
  assert.equal(validateSubscribedEvents(["gate_event.blocked", "gate_event.blocked"]), { ok: ["gate_event.blocked"] });
  assert.is(stableUuid("a", "b"), stableUuid("a", "b"));
  assert.match(stableUuid("a", "b"), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.is.not(stableUuid("a", "b"), stableUuid("ab", ""));
});

test.run();
