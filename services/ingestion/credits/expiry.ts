/**
 * Expiry of grants: what is left of a grant at its `expires_at` leaves the balance then (every
 * answer computes the balance as of now), and this sweep writes it down: the grant final, an
 * `expiry` ledger entry, a `credits.expired` webhook. Accounts are found without a scan: each
 * grant with an expiry registers its account in the bucket of its hour (`credit_expiries`), and
 * the sweep reads the buckets from its cursor (the earliest hour not yet done) to now by `_id`.
 */
import { HOUR_MS } from "@meter/lib/time";
import { hourOf } from "./allocate.ts";
import { changeAccounts, type AccountDeps, type AccountTarget } from "./settle.ts";


/** An hour's bucket is done this long after the hour (a registration from a lagging clock still lands). */
const BUCKET_DONE_AFTER_MS = 5 * 60_000;

/** Hours one sweep reads at most (after an outage it catches up over several). */
const HOURS_PER_SWEEP = 168;

/** One sweep; true when it found accounts to look at (the job then runs again soon). */
export async function expireDue(deps: AccountDeps): Promise<boolean> {
  const cursor = (await deps.credits.expiries.findOne({ _id: "cursor" }))?.hour;
  const now = deps.now().getTime();
  if (cursor === undefined || cursor > now) return false;
  const hours: number[] = [];
  for (let h = cursor; h <= hourOf(now) && hours.length < HOURS_PER_SWEEP; h += HOUR_MS) hours.push(h);
  const buckets = await deps.credits.expiries.find({ _id: { $in: hours.map(String) } }).toArray();
  const ids = [...new Set(buckets.flatMap((b) => b.accounts ?? []))];
  if (ids.length > 0) {
    const targets = new Map<string, AccountTarget>();
    for (const id of ids) {
      const cut = id.indexOf("|");
      targets.set(id, { productId: id.slice(0, cut), owner: id.slice(cut + 1) });
    }
    await changeAccounts(deps, targets, (_, c) => void c.expireDue());
  }
  let next = cursor;
  for (const h of hours) {
    if (h + HOUR_MS + BUCKET_DONE_AFTER_MS > now) break;
    next = h + HOUR_MS;
  }
  if (next !== cursor) {
    // Conditional: a registration that moved the cursor back meanwhile keeps its hour.
    await deps.credits.expiries.updateOne({ _id: "cursor", hour: cursor }, { $set: { hour: next } });
    const done = hours.filter((h) => h < next).map(String);
    if (done.length > 0) await deps.credits.expiries.deleteMany({ _id: { $in: done } });
  }
  return ids.length > 0 || next !== cursor;
}
