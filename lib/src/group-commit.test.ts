import { suite } from "uvu";
import * as assert from "uvu/assert";
import { GroupCommit } from "./group-commit.ts";

// Rounds: the first write starts alone, writes asked for meanwhile share the next round; one
// item's Error fails that item only, a throw fails its round only.
const t = suite("group commit");

/** A writer whose rounds end when the test says so; it records each round's items. */
function writer() {
  const rounds: number[][] = [];
  const ends: (() => void)[] = [];
  const commit = new GroupCommit<number, string>(async (items) => {
    rounds.push(items);
    await new Promise<void>((resolve) => ends.push(resolve));
    if (items.includes(-1)) throw new Error("round failed");
    return items.map((i) => (i === 13 ? new Error(`item ${i} failed`) : `done ${i}`));
  });
  const endRound = async (n: number) => {
    while (ends.length < n) await new Promise((r) => setImmediate(r));
    ends[n - 1]!();
  };
  return { commit, rounds, endRound };
}

t("a lone write starts at once; those asked for during a round share the next", async () => {
  const { commit, rounds, endRound } = writer();
  const first = commit.run(1);
  const rest = [commit.run(2), commit.run(3), commit.run(4)];
  await endRound(1);
  assert.is(await first, "done 1");
  await endRound(2);
  assert.equal(await Promise.all(rest), ["done 2", "done 3", "done 4"]);
  assert.equal(rounds, [[1], [2, 3, 4]]);
  // Idle again: the next write starts its own round at once.
  const later = commit.run(5);
  await endRound(3);
  assert.is(await later, "done 5");
  assert.equal(rounds[2], [5]);
});

t("an item's Error fails that item; a throw fails its round, and the next round still runs", async () => {
  const { commit, endRound } = writer();
  const first = commit.run(1);
  const second = [commit.run(12), commit.run(13), commit.run(-1)].map((p) => p.then((v) => v, (e: Error) => e.message));
  await endRound(1);
  await first;
  const third = commit.run(21); // round 2 is running: this one waits for round 3
  await endRound(2);
  assert.equal(await Promise.all(second), ["round failed", "round failed", "round failed"]);
  await endRound(3);
  assert.is(await third, "done 21");

  const { commit: c2, endRound: end2 } = writer();
  const lone = c2.run(1);
  const mixed = [c2.run(12), c2.run(13)].map((p) => p.then((v) => v, (e: Error) => e.message));
  await end2(1);
  await lone;
  await end2(2);
  assert.equal(await Promise.all(mixed), ["done 12", "item 13 failed"]);
});

t("a round first awaits gather: writes asked for meanwhile join it", async () => {
  const rounds: number[][] = [];
  const gathers: (() => void)[] = [];
  const commit = new GroupCommit<number, string>(
    async (items) => {
      rounds.push(items);
      return items.map((i) => `done ${i}`);
    },
    () => new Promise<void>((resolve) => gathers.push(resolve)),
  );
  const first = commit.run(1);
  const second = commit.run(2);
  assert.is(gathers.length, 1, "the round is gathering");
  assert.equal(rounds, [], "nothing written before the gathering ends");
  gathers[0]!();
  assert.equal(await Promise.all([first, second]), ["done 1", "done 2"]);
  assert.equal(rounds, [[1, 2]]);
});

t.run();
