// A late change's move of draws beside other changes of the same account: each computes from a
// period's spend read after its copy of the account, so a move another change applied first is
// in the spend it reads too, and nothing is drawn twice. The database is real; the period's
// counter is a value the test steps, so that the changes interleave where they would race.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { freshDbName, withTestMongo } from "../../../test/support/database.ts";
import { RETENTION_DEFAULTS } from "../domain/retention-policy.ts";
import { OutboxStore } from "../store/outbox.ts";
import type { PeriodSpend } from "../store/counters.ts";
import { accountId, userOwner } from "./account.ts";
import { addGrant } from "./grants.ts";
import { changeAccounts, moveDrawn, settlePeriods, type DrawnMove } from "./settle.ts";
import { CreditStore } from "./store.ts";

const t = suite<{ mongo: MongoClient; url: string }>("draws moved by late changes beside other changes");
withTestMongo(t);

const N = 1e9;
const DAY = 86_400_000;
const productId = "p-moves";
const owner = userOwner("u");
const id = accountId(productId, owner);
const now = Date.UTC(2026, 10, 15, 10);
const [P1, P2] = [now - 3 * 3_600_000, now - 2.5 * 3_600_000];
const end = new Date(now + 30 * DAY);
const closedBefore = new Date(now - 60 * DAY);

/** An account with $10 of credits whose period P1 drew $3 (allowance 0); P1's counter spent $3, all of it on credits. */
async function drewThree(mongo: MongoClient) {
  const db = mongo.db(freshDbName("credit_moves"));
  const deps = { credits: new CreditStore(db), outbox: new OutboxStore(db), now: () => new Date(now), retention: RETENTION_DEFAULTS };
  await addGrant(deps, productId, owner, { id: "topup", amount: 10 }, { lowAt: null, enabled: true });
  await changeAccounts(deps, new Map([[id, { productId, owner }]]), (_, c) => c.settle([{ key: String(P1), end, needed: 3 * N }], closedBefore));
  const counter = { spend: 3 * N };
  const read = async (): Promise<Map<string, PeriodSpend>> => new Map([["c1", { spend: counter.spend, uncredited: 0 }]]);
  return { db, deps, counter, read };
}

/** A move out of P1 into P2 of events that cost `cost` dollars, all drawn for in P2. */
const move = (job: string, cost: number): DrawnMove => ({
  productId,
  owner,
  job,
  from: { key: String(P1), end, counterId: "c1", credited: true, allowance: 0 },
  to: [{ key: String(P2), end, cost: cost * N, credited: cost * N }],
});

/** A read that answers what it read first, after `meanwhile` ran to its end: a read that lost the race. */
function lateRead(read: (ids: readonly string[]) => Promise<Map<string, PeriodSpend>>, meanwhile: () => Promise<void>) {
  let first = true;
  return async (ids: readonly string[]) => {
    const got = await read(ids);
    if (first) {
      first = false;
      await meanwhile();
    }
    return got;
  };
}

t("two moves of one period's lists: the one that read the spend before the other's hand-over reads it again, and the new period counts all of it drawn", async ({ mongo }) => {
  const { deps, counter, read } = await drewThree(mongo);
  // The $2 list's move took its events out of the counter and read the spend ($1 left)...
  counter.spend = 1 * N;
  const x = moveDrawn(
    deps,
    // ...and, before that read came back, the $1 list's move took its events out and handed over its draw.
    lateRead(read, async () => {
      counter.spend = 0;
      await moveDrawn(deps, read, move("mv_y", 1));
    }),
    move("mv_x", 2),
  );
  await x;
  const stored = (await deps.credits.accountsOf([id])).get(id)!;
  assert.is(stored.drawn[String(P1)]?.n ?? 0, 0, "the old period keeps nothing of what it drew for the moved events");
  assert.is(stored.drawn[String(P2)]!.n, 3 * N, "the new period counts all of it as drawn");
});

type Spends = (ids: readonly string[]) => Promise<Map<string, PeriodSpend>>;
type Deps = Awaited<ReturnType<typeof drewThree>>["deps"];

/** A billing period of the user whose plan draws credits (allowance 0). */
const period = (counterId: string, start: number) => ({ productId, userId: "u", counterId, start: new Date(start), end, allowance: 0, lowAt: null, own: true });

/** Settles one period of the user through `accounts` (this process's, or another's). */
const settle = (accounts: Deps, spends: Spends, counterId: string, start: number) =>
  settlePeriods({ spends, teamSpends: async () => new Map(), closedBefore, accounts }, [period(counterId, start)]);

/**
 * A $1 event arrived in P1 ($4 counted), and its settle (through `accounts`) read that; before
 * the read came back, a late change moved the $3 out and handed over what P1 drew beyond the
 * $1 still in it.
 */
async function settleBesideMove({ deps, counter, read }: Awaited<ReturnType<typeof drewThree>>, accounts: Deps) {
  counter.spend = 4 * N;
  const raced = lateRead(read, async () => {
    counter.spend = 1 * N;
    await moveDrawn(deps, read, move("mv_z", 3));
  });
  await settle(accounts, raced, "c1", P1);
  return (await deps.credits.accountsOf([id])).get(id)!;
}

const balance = (a: { grants: Record<string, { remaining_nano: number }> }) => Object.values(a.grants).reduce((x, g) => x + g.remaining_nano, 0);

t("a settle that read a period's spend before a move out of it was handed over reads it again: what the period drew for the moved events is not drawn twice", async ({ mongo }) => {
  const three = await drewThree(mongo);
  const stored = await settleBesideMove(three, three.deps);
  const drawn = (stored.drawn[String(P1)]?.n ?? 0) + (stored.drawn[String(P2)]?.n ?? 0);
  assert.is(drawn, 3 * N, "$3 drawn in all for $4 spent: P1 kept $1 for the $1 left in it, P2 holds $2 of its $3 (its own settle draws the last $1)");
  assert.is(balance(stored), 7 * N, "the balance lost $3, not $6");
});

t("a settle whose copy of the account is read after its first read of the spend (another process's, a cold cache) reads the spend again", async ({ mongo }) => {
  const three = await drewThree(mongo);
  const stored = await settleBesideMove(three, { ...three.deps, credits: new CreditStore(three.db) });
  assert.is(balance(stored), 7 * N, "the balance lost $3, not $6");
});

t("a move that hands over nothing (its events not settled yet) still meets their settle that read the spend before it: they are drawn once, in their new period", async ({ mongo }) => {
  const { deps } = await drewThree(mongo);
  // A job just added $2 to P1 ($5 counted, $3 drawn); before its settle wrote, a late change
  // moved those events to P2. P1 drew nothing for them yet: the move hands nothing over.
  const spent = new Map([["c1", 5 * N], ["c2", 0]]);
  const both: Spends = async (ids) => new Map(ids.map((i) => [i, { spend: spent.get(i) ?? 0, uncredited: 0 }]));
  const raced = lateRead(both, async () => {
    spent.set("c1", 3 * N);
    spent.set("c2", 2 * N);
    await moveDrawn(deps, both, move("mv_e", 2));
  });
  await settle(deps, raced, "c1", P1);
  await settle(deps, both, "c2", P2);
  const stored = (await deps.credits.accountsOf([id])).get(id)!;
  assert.equal([stored.drawn[String(P1)]!.n, stored.drawn[String(P2)]!.n], [3 * N, 2 * N], "P1 drew its $3, P2 the $2 moved into it");
  assert.is(balance(stored), 5 * N, "$5 spent, $5 drawn");
});

t.run();
