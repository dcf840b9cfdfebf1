import { BSON, type Collection, type Db } from "mongodb";
import { LRUCache } from "lru-cache";
import type { Logger } from "@meter/lib/logger";
import { findByIds, isDuplicateKeyError } from "@meter/lib/mongo";
import { dueForRefresh } from "@meter/lib/refresh-ahead";
import { userCacheReads } from "@meter/lib/metrics";

/**
 * How replicas learn of each other's user changes: the `user_changes` collection is a ring of
 * SLOTS seconds (`_id` = second mod SLOTS), each naming the users changed in that second on
 * up to PAGES documents. Its size never grows, and every read and write of it is by `_id`.
 */
const SLOTS = 600;
/**
 * A page names at most this many users, so that no document grows past a few kilobytes (each
 * naming rewrites it). A second's first page is `_id` "<slot>", the next ones "<slot>.<page>":
 * a page is started only once the one before is full, so a poll reads the next pages of full
 * ones only, in a burst of sign-ups.
 */
const KEYS_PER_SLOT = 100;
/** Pages a second: past PAGES x KEYS_PER_SLOT users a second (a bulk change), the second means "every user". */
const PAGES = 10;
/**
 * Every poll reads this many seconds back and ahead, so a change is applied again and again
 * for as long (a replica whose cached read raced the change reads the user again at its next
 * poll), and replicas' clocks may differ by up to this much either way.
 */
const WINDOW_S = 10;
const POLL_MS = 500;
/** Backstop for a change whose writer died between writing the user and naming it again. */
const TTL_MS = 10 * 60_000;
/**
 * A document read in the last REFRESH_SHARE of its TTL is read again in the background while
 * the cached one answers (lib/src/refresh-ahead.ts): a user whose client refreshes its session
 * every minute, and a team whose members are served, never make a call wait for the TTL's
 * read. The last fifth (two minutes), not the second half: every such read is a database read,
 * and a document in steady use is read about as often as its TTL alone would read it.
 */
const REFRESH_SHARE = 1 / 5;

interface ChangeSlot {
  /** A string: the embedded database looks up only string and ObjectId `_id`s by its index. */
  _id: string;
  second: number;
  keys: string[];
  /** Users named in this second, up to KEYS_PER_SLOT. */
  n: number;
}

const slotOf = (second: number) => String(second % SLOTS);
const pageOf = (second: number, page: number) => (page === 0 ? slotOf(second) : `${slotOf(second)}.${page}`);
/** Reads from memory stop when the last poll that read the ring is older than this. */
const STALE_POLL_MS = 5_000;
/**
 * A replica that nobody read a user from for this long stops polling (an idle service rests);
 * memory answers nothing then (its last poll is stale), and the next read polls again.
 */
const REST_AFTER_MS = 10_000;
/** Forgettings remembered at most; past it, every read under way is refused instead. */
const MAX_FORGOTTEN = 10_000;

/**
 * A read-through cache of user documents for the plans service, kept exact within this
 * process and within about POLL_MS across replicas:
 * - this process forgets a user as soon as its own write of it returns;
 * - every write names the user in `user_changes` before it is made (and again after, when it
 *   took long); every replica polls it, WINDOW_S seconds back and ahead, and forgets whom it names;
 * - a read that was under way when its user was forgotten is not kept (it may hold the user
 *   as it was before the change).
 * Documents are kept as the BSON the database sent (one buffer each, nothing for the garbage
 * collector to walk), bounded by size; a user that does not exist is never cached.
 */
export class UserCache {
  private readonly docs: LRUCache<string, Buffer>;
  private readonly enabled: boolean;
  private readonly now: () => number;
  private readonly changes: Collection<ChangeSlot>;
  /** Orders reads and forgettings: a read may be kept only if nothing forgot its user since it began. */
  private tick = 0;
  private readonly forgotten = new Map<string, number>();
  /** Reads that began at or before this tick are not kept (the cache was emptied, or forgettings dropped). */
  private refuseUpTo = 0;
  /** Ticks at which the reads under way began. */
  private readonly inFlight = new Set<number>();
  /**
   * "never": not started (a single process, a tool writing users): memory always answers.
   * "on": polling, and memory answers while the last good poll is recent. "off": stopped.
   */
  private state: "never" | "on" | "off" = "never";
  private lastPolled: number;
  private lastGoodPollAt = 0;
  /** A second whose pages this process found full: its other changes need not be named. */
  private fullSecond = -1;
  /** The page of `second` this process last named a user on (the ones before it are full). */
  private page = { second: -1, page: 0 };
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;
  private lastReadAt = 0;
  /** Documents being read again ahead of their TTL (refresh). */
  private readonly refreshing = new Set<string>();
  /** Polling paused: nobody read a user for REST_AFTER_MS (until the next read). */
  resting = false;

  constructor(
    db: Db,
    private readonly logger: Logger,
    maxBytes: number,
    /** The clock changes are named and polled by, and, when given, documents' TTL is counted by (tests skew it). */
    now?: () => number,
  ) {
    this.now = now ?? Date.now;
    this.lastPolled = this.second();
    this.enabled = maxBytes > 0;
    this.docs = new LRUCache({
      maxSize: Math.max(1, maxBytes),
      sizeCalculation: (b) => b.byteLength + 64,
      ttl: TTL_MS,
      // Monotonic unless a test gives its clock.
      ...(now && { perf: { now } }),
    });
    this.changes = db.collection<ChangeSlot>("user_changes");
  }

  /**
   * The documents of `keys` that exist, from memory where this cache holds them and by `load`
   * (raw BSON documents by `_id`) for the rest.
   */
  async read(keys: readonly string[], load: (missing: string[]) => Promise<Buffer[]>): Promise<Map<string, BSON.Document>> {
    this.lastReadAt = this.now();
    if (this.resting) this.keepPolling(true);
    const out = new Map<string, BSON.Document>();
    const missing: string[] = [];
    const ageing: string[] = [];
    const memory = this.answersFromMemory();
    for (const k of keys) {
      const hit = memory ? this.docs.get(k) : undefined;
      if (hit) {
        out.set(k, BSON.deserialize(hit));
        if (dueForRefresh(this.docs, k, REFRESH_SHARE) && !this.refreshing.has(k)) ageing.push(k);
      } else missing.push(k);
    }
    if (ageing.length > 0) void this.refresh(ageing, load);
    if (out.size > 0) userCacheReads.inc({ source: "memory" }, out.size);
    if (missing.length === 0) return out;
    userCacheReads.inc({ source: "database" }, missing.length);
    const began = memory ? this.begin() : 0;
    try {
      for (const raw of await load(missing)) {
        const doc = BSON.deserialize(raw);
        const key = doc._id as string;
        out.set(key, doc);
        if (memory && this.keepable(key, began)) this.docs.set(key, copy(raw));
      }
    } finally {
      if (memory) this.end(began);
    }
    return out;
  }

  /**
   * Reads `keys` again into memory, kept as a read's answer is (not if forgotten meanwhile); a
   * failure leaves the entries to their TTL, and the next read after it reads them itself.
   */
  private async refresh(keys: readonly string[], load: (missing: string[]) => Promise<Buffer[]>): Promise<void> {
    for (const k of keys) this.refreshing.add(k);
    userCacheReads.inc({ source: "ahead" }, keys.length);
    const began = this.begin();
    try {
      for (const raw of await load([...keys])) {
        const key = BSON.deserialize(raw)._id as string;
        if (this.keepable(key, began)) this.docs.set(key, copy(raw));
      }
    } catch (err) {
      this.logger.debug({ err }, "could not read cached users again ahead of their TTL; they will be read when it passes");
    } finally {
      this.end(began);
      for (const k of keys) this.refreshing.delete(k);
    }
  }

  /** Off, stopped, or polling but not heard from the ring lately: every user from the database. */
  private answersFromMemory(): boolean {
    if (!this.enabled || this.state === "off") return false;
    return this.state === "never" || this.now() - this.lastGoodPollAt <= STALE_POLL_MS;
  }

  /**
   * Runs `write`, a change of the user `key`, so that every replica's cache lets go of it:
   * named to the others before (and again after, when the write took long enough that their
   * polls may have read past the first naming), forgotten here once it returns.
   */
  async change<T>(key: string, write: () => Promise<T>): Promise<T> {
    const started = this.now();
    // A change the other replicas cannot be told of is not made: the caller gets the database's
    // error (and may retry) rather than replicas answering the user as it was for TTL_MS.
    await this.announce(key);
    try {
      return await write();
    } finally {
      this.forget(key);
      if (this.now() - started > (WINDOW_S * 1000) / 2) {
        await this.announce(key).catch((err) => this.logger.warn({ err, key }, "could not announce a slow user change again; other replicas may hold the user as it was for up to 10 minutes"));
      }
    }
  }

  /**
   * Names `key` on this second's first page that is not full: one update, unless that page has
   * not started this second yet (then it is started afresh over the second it held before).
   */
  private async announce(key: string): Promise<void> {
    const second = this.second();
    if (second === this.fullSecond) return;
    for (let page = this.page.second === second ? this.page.page : 0; page < PAGES; page++) {
      if (await this.name(key, pageOf(second, page), second)) {
        this.page = { second, page };
        return;
      }
    }
    // Every page of this second is full: it stands for every user, this one and the rest of
    // this second's changes too.
    this.fullSecond = second;
  }

  /** Names `key` on page `id` of `second`; false when that page is full. */
  private async name(key: string, id: string, second: number): Promise<boolean> {
    const add = () => this.changes.updateOne({ _id: id, second, n: { $lt: KEYS_PER_SLOT } }, { $addToSet: { keys: key }, $inc: { n: 1 } });
    if ((await add()).matchedCount > 0) return true;
    try {
      await this.changes.updateOne({ _id: id, second: { $lt: second } }, { $set: { second, keys: [key], n: 1 } }, { upsert: true });
      return true;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    // The page holds this second already: full, or started by another writer a moment ago.
    return (await add()).matchedCount > 0;
  }

  private forget(key: string): void {
    if (!this.enabled) return;
    if (this.forgotten.size >= MAX_FORGOTTEN) {
      // Reads under way for that long a list: refuse them all rather than remember more.
      this.refuseUpTo = this.tick;
      this.forgotten.clear();
    }
    this.forgotten.set(key, ++this.tick);
    this.docs.delete(key);
  }

  /** Polls the other replicas' changes (nothing to poll when this process caches nothing). */
  start(): void {
    if (!this.enabled || this.state === "on") return;
    // What memory holds from before may have changed elsewhere meanwhile.
    if (this.state === "off") this.clear();
    this.state = "on";
    this.lastPolled = this.second();
    this.lastGoodPollAt = this.now();
    this.lastReadAt = this.now();
    this.keepPolling(false);
  }

  /** Polls every POLL_MS (and at once with `now`) until nobody read a user for REST_AFTER_MS. */
  private keepPolling(now: boolean): void {
    this.resting = false;
    clearInterval(this.timer);
    const tick = () => {
      if (this.now() - this.lastReadAt > REST_AFTER_MS) {
        // Resting: memory answers nothing until a poll reads the ring again.
        this.resting = true;
        this.lastGoodPollAt = 0;
        clearInterval(this.timer);
        return;
      }
      this.polling ??= this.poll().finally(() => (this.polling = undefined));
    };
    this.timer = setInterval(tick, POLL_MS);
    this.timer.unref();
    if (now) tick();
  }

  /** Stops polling; from then on every user is read from the database. */
  async stop(): Promise<void> {
    if (this.state !== "on") return;
    this.state = "off";
    this.resting = false;
    clearInterval(this.timer);
    await this.polling;
    this.clear();
  }

  /**
   * Reads the seconds since the last poll, WINDOW_S before (a change named before its write
   * landed is forgotten again) and WINDOW_S ahead (a writer whose clock runs ahead), and
   * forgets whom they name. Never rejects.
   */
  async poll(): Promise<void> {
    try {
      const now = this.second();
      const from = Math.min(this.lastPolled, now) - WINDOW_S;
      const to = now + WINDOW_S;
      if (to - from >= SLOTS - 1) {
        // Longer than the ring holds since the last poll (or a clock jump): anything may have changed.
        this.clear();
      } else {
        const seconds = Array.from({ length: to - from + 1 }, (_, i) => from + i);
        const wanted = new Set(seconds);
        const full: number[] = [];
        for (const slot of await findByIds(this.changes, seconds.map(slotOf))) {
          if (!wanted.has(slot.second)) continue;
          for (const k of slot.keys ?? []) this.forget(k);
          if (slot.n >= KEYS_PER_SLOT) full.push(slot.second);
        }
        // The further pages of full seconds, in one read: a page is started once the one before is full.
        const pages = full.flatMap((second) => Array.from({ length: PAGES - 1 }, (_, i) => pageOf(second, i + 1)));
        const last = new Set(full.map((second) => pageOf(second, PAGES - 1)));
        for (const page of pages.length === 0 ? [] : await findByIds(this.changes, pages)) {
          if (!wanted.has(page.second)) continue;
          if (last.has(page._id) && page.n >= KEYS_PER_SLOT) this.clear();
          else for (const k of page.keys ?? []) this.forget(k);
        }
      }
      this.lastPolled = now;
      this.lastGoodPollAt = this.now();
      this.pruneForgotten();
    } catch (err) {
      // Memory stops answering once the last good poll is STALE_POLL_MS old (answersFromMemory).
      this.logger.warn({ err }, "could not read other replicas' user changes; will read them again");
    }
  }

  private second(): number {
    return Math.floor(this.now() / 1000);
  }

  private clear(): void {
    this.refuseUpTo = ++this.tick;
    this.docs.clear();
  }

  private begin(): number {
    const began = ++this.tick;
    this.inFlight.add(began);
    return began;
  }

  private end(began: number): void {
    this.inFlight.delete(began);
    if (this.inFlight.size === 0) this.forgotten.clear();
  }

  private keepable(key: string, began: number): boolean {
    return this.refuseUpTo < began && (this.forgotten.get(key) ?? 0) < began;
  }

  /** Forgettings older than every read under way can no longer refuse one. */
  private pruneForgotten(): void {
    let oldest = this.tick + 1;
    for (const t of this.inFlight) oldest = Math.min(oldest, t);
    for (const [k, t] of this.forgotten) if (t < oldest) this.forgotten.delete(k);
  }
}

/** A buffer of its own: the driver's raw documents are views into the whole reply. */
function copy(raw: Buffer): Buffer {
  const own = Buffer.allocUnsafeSlow(raw.byteLength);
  raw.copy(own);
  return own;
}
