import { test } from "uvu";
import * as assert from "uvu/assert";
import { backlogReadFailures, registry, trackJobQueue } from "./metrics.ts";

test("a backlog that cannot be read is left out of the scrape and counted", async () => {
  const name = `unreadable-${process.pid}`;
  trackJobQueue(name, async () => {
    throw new Error("the database went away");
  });
  const before = (await backlogReadFailures.get()).values.find((v) => v.labels.name === name)?.value ?? 0;
  const text = await registry.metrics();
  assert.not.match(text, new RegExp(`meter_job_queue_due\\{name="${name}"\\}`));
  // Counted by that scrape (the next one shows it: the counter is written out before the gauges read).
  const after = (await backlogReadFailures.get()).values.find((v) => v.labels.name === name)?.value ?? 0;
  assert.is(after, before + 1);
});

test.run();
