import { Code, ConnectError } from "@connectrpc/connect";
import type { Collection } from "mongodb";
import type { Logger } from "@meter/lib/logger";
import { outboxSetAside } from "@meter/lib/metrics";
import { payloadsOf, WAITING, type OutboxEntry, type WrittenEntries } from "../store/outbox.ts";

/**
 * One handover to a peer: outbox entries of one kind are sent in batches and deleted only
 * after the peer acknowledged them. A crash between the two resends the batch; receivers
 * are idempotent on the ids, so a repeat is harmless and nothing is ever dropped. A peer
 * that fails (down, or not implementing the call yet) only delays the handover.
 *
 * An entry the peer refuses for what it holds (or that cannot even be read into a request)
 * would fail forever: it is passed by so the entries behind it go on, its attempts are
 * counted in the entry, and after `maxAttempts` it is set aside: kept, logged with its id,
 * counted in `meter_outbox_set_aside`, and put back in line by `OutboxStore.replay`.
 */
export interface Outbox {
  name: string;
  collection: Collection<OutboxEntry>;
  kind: OutboxEntry["kind"];
  /** Payloads per call at most; else the relay's `batchSize`. */
  batchSize?: number;
  /** Called with at most `batchSize` payloads at a time. */
  send(payloads: Record<string, any>[]): Promise<void>;
  /** The entries this process wrote to `collection`, sent first as written (store/outbox.ts). */
  written?: WrittenEntries;
}

export interface RelayOptions {
  /** First backoff of a failing outbox (also the repeating job's interval, jobs/relay.ts). */
  intervalMs: number;
  /** Longest wait before retrying an outbox whose peer keeps failing. */
  maxBackoffMs: number;
  batchSize: number;
  /** Failed handovers of one entry, for a cause other than the peer being unreachable, before it is set aside. */
  maxAttempts: number;
  logger: Logger;
}

/** An entry read for handing over, with its payloads. */
interface Read {
  e: OutboxEntry;
  payloads: Record<string, unknown>[];
}

/** `payloads` to the peer in calls of at most `size`. */
async function sendAll(box: Outbox, payloads: readonly Record<string, unknown>[], size: number): Promise<void> {
  for (let i = 0; i < payloads.length; i += size) await box.send(payloads.slice(i, i + size));
}

/** Failures that say nothing about the entry: the peer is down, busy or not there yet. */
const PEER_FAILURES = new Set([Code.Unavailable, Code.DeadlineExceeded, Code.Canceled, Code.Unimplemented, Code.ResourceExhausted, Code.Aborted]);

function isPeerFailure(err: unknown): boolean {
  return err instanceof ConnectError && PEER_FAILURES.has(err.code);
}

/** Delay before retry number `failures` (1, 2, ...): doubling from the interval, capped. */
export function backoffMs(failures: number, intervalMs: number, maxMs: number): number {
  return Math.min(maxMs, intervalMs * 2 ** Math.min(failures, 20));
}

/**
 * The relay's work, one round at a time: run by the Agenda job in jobs/relay.ts (repeating
 * every `intervalMs`, and kicked when entries are written). Backoff is kept per process: an
 * outbox whose peer failed is skipped by this process's rounds until its retry time.
 */
export class Relay {
  private readonly state = new Map<string, { failures: number; retryAt: number }>();
  private stopped = false;

  constructor(
    private readonly outboxes: Outbox[],
    private readonly opts: RelayOptions,
    /** Other work run every round (the recovery sweep). */
    private readonly chores: { name: string; run(): Promise<unknown> }[] = [],
  ) {}

  /** Ends the current round after the entry being sent (shutdown). */
  halt(): void {
    this.stopped = true;
  }

  /**
   * One pass over every chore and outbox; failures are logged and retried later. True when it
   * found work: a chore did some (returned a count above 0), an entry was handed over or
   * passed by, or an outbox waits to retry its peer.
   */
  async round(progress: () => Promise<unknown> = async () => {}): Promise<boolean> {
    let found = false;
    for (const chore of this.chores) {
      try {
        const done = await chore.run();
        if (typeof done === "number" && done > 0) found = true;
      } catch (err) {
        this.opts.logger.warn({ err, chore: chore.name }, "background chore failed; will retry");
      }
    }
    for (const box of this.outboxes) {
      const st = this.state.get(box.name) ?? { failures: 0, retryAt: 0 };
      this.state.set(box.name, st);
      if (Date.now() < st.retryAt) {
        found = true;
        continue;
      }
      try {
        if ((await this.drain(box, progress)) > 0) found = true;
        st.failures = 0;
      } catch (err) {
        found = true;
        st.failures++;
        const wait = backoffMs(st.failures, this.opts.intervalMs, this.opts.maxBackoffMs);
        st.retryAt = Date.now() + wait;
        this.opts.logger.warn(
          { err: (err as Error).message, outbox: box.name, failures: st.failures, retryInMs: wait },
          "handover failed; will retry",
        );
      }
    }
    return found;
  }

  /**
   * Sends the waiting entries, those that fit together in one call (`batchSize` payloads) as
   * one, and deletes each group once all of it was acknowledged. A peer failure ends the drain
   * (the outbox backs off, order kept); a group refused otherwise is sent again entry by entry,
   * so that the refusal is charged to the entry that caused it, which is passed by for the rest
   * of the drain. Returns the entries it took.
   */
  private async drain(box: Outbox, progress: () => Promise<unknown>): Promise<number> {
    const passed: string[] = [];
    const size = box.batchSize ?? this.opts.batchSize;
    let taken = 0;
    for (let rounds = 0; rounds < 100 && !this.stopped; rounds++) {
      // What this process wrote goes first, as written; the collection is scanned once none is left.
      const mine = box.written?.take(box.kind, 20) ?? [];
      const heads = mine.length > 0 ? mine : await this.waitingIds(box, passed);
      if (heads.length === 0) return taken;
      // Entries written by batches that completed together go in one call: one ledger segment
      // and one day's recomputation in analytics instead of one each (docs/benchmarks.md).
      let group: Read[] = [];
      let held = 0;
      for (const head of heads) {
        if (this.stopped) break;
        const e = mine.length > 0 ? (head as OutboxEntry) : await box.collection.findOne({ _id: head._id, ...WAITING });
        if (!e) continue;
        taken++;
        let payloads: Record<string, unknown>[];
        try {
          payloads = payloadsOf(e);
        } catch (err) {
          passed.push(e._id);
          await this.entryFailed(box, e, err);
          continue;
        }
        if (held > 0 && held + payloads.length > size) {
          await this.handOver(box, group, size, passed, progress);
          group = [];
          held = 0;
        }
        group.push({ e, payloads });
        held += payloads.length;
      }
      await this.handOver(box, group, size, passed, progress);
      if (mine.length === 0 && heads.length < 20) return taken;
    }
    return taken;
  }

  /**
   * The ids of up to twenty waiting entries, but those passed by and those this process holds as
   * written. Ids first, then one entry at a time: an entry holds up to a whole batch (megabytes),
   * and twenty of them in one answer pass the embedded database's 48 MB message bound.
   */
  private waitingIds(box: Outbox, passed: readonly string[]): Promise<{ _id: string }[]> {
    const skip = [...passed, ...(box.written?.ids(box.kind) ?? [])];
    const filter = { kind: box.kind, ...WAITING, ...(skip.length > 0 ? { _id: { $nin: skip } } : {}) };
    return box.collection.find(filter, { projection: { _id: 1 } }).limit(20).toArray();
  }

  /** Sends a group of entries and deletes them; see drain. */
  private async handOver(box: Outbox, group: readonly Read[], size: number, passed: string[], progress: () => Promise<unknown>): Promise<void> {
    if (group.length > 1) {
      try {
        await sendAll(box, group.flatMap((g) => g.payloads), size);
        await box.collection.deleteMany({ _id: { $in: group.map((g) => g.e._id) } });
        await progress();
        return;
      } catch (err) {
        if (isPeerFailure(err)) throw err;
        // Refused for what one of them holds: each alone below tells which.
      }
    }
    for (const { e, payloads } of group) {
      try {
        await sendAll(box, payloads, size);
      } catch (err) {
        if (isPeerFailure(err)) throw err;
        passed.push(e._id);
        await this.entryFailed(box, e, err);
        continue;
      }
      await box.collection.deleteOne({ _id: e._id });
      await progress();
    }
  }

  /** Counts a failed attempt in the entry; the last allowed one sets it aside. */
  private async entryFailed(box: Outbox, e: OutboxEntry, err: unknown): Promise<void> {
    const message = (err instanceof Error ? err.message : String(err)).slice(0, 1000);
    const after = await box.collection.findOneAndUpdate(
      { _id: e._id },
      { $inc: { attempts: 1 }, $set: { last_error: message } },
      { returnDocument: "after" },
    );
    const attempts = after?.attempts ?? 0;
    if (attempts < this.opts.maxAttempts) {
      this.opts.logger.warn({ err: message, outbox: box.name, entry: e._id, attempts }, "outbox entry refused; passed by, will retry");
      return;
    }
    const res = await box.collection.updateOne({ _id: e._id, ...WAITING }, { $set: { set_aside_at: new Date() } });
    if (res.modifiedCount === 1) {
      outboxSetAside.inc({ name: box.name });
      this.opts.logger.error(
        { err: message, outbox: box.name, entry: e._id, attempts, events: e.count },
        "outbox entry set aside after failing every attempt; fix the cause, then replay it (ingestion README, \"Set-aside outbox entries\")",
      );
    }
  }
}
