/**
 * A user's sessions, over the session-window rule (rules/sessions.ts). Without a caller-given
 * session id, a user has one library-kept session whose window counts from its start: after
 * session_timeout_minutes its id rotates and its cost starts again at 0. A caller-given session
 * id accrues its own cost for as long as the caller uses it; it is forgotten after a window
 * without activity.
 */
import { randomUUID } from "node:crypto";
import { windowOver } from "./rules/index.ts";

export class Session {
  /** Spend of settled calls. */
  cost = 0;
  /** Pre-call estimates of calls in flight. */
  reserved = 0;
  lastActive: number;
  constructor(
    readonly id: string,
    readonly startedAt: number,
  ) {
    this.lastActive = startedAt;
  }
}

export class Sessions {
  own: Session;
  /** Caller-given sessions; created on first use (most users have none). */
  private given: Map<string, Session> | undefined;

  constructor(now: number) {
    this.own = new Session(randomUUID(), now);
  }

  /** The session a call belongs to at `now`, rotating the library's own when its window is over. */
  at(sessionId: string | null | undefined, now: number, timeoutMs: number): Session {
    let s: Session | undefined;
    if (sessionId) {
      this.given ??= new Map();
      s = this.given.get(sessionId);
      if (!s) {
        s = new Session(sessionId, now);
        this.given.set(sessionId, s);
      }
    } else {
      s = this.current(now, timeoutMs);
    }
    s.lastActive = now;
    return s;
  }

  /** The library's own session, rotated when its window is over. */
  current(now: number, timeoutMs: number): Session {
    if (windowOver(this.own.startedAt, now, timeoutMs)) this.own = new Session(randomUUID(), now);
    return this.own;
  }

  /** Forgets caller-given sessions idle for a whole window with nothing in flight. */
  prune(now: number, timeoutMs: number): void {
    if (!this.given) return;
    for (const [id, s] of this.given) if (s.reserved === 0 && windowOver(s.lastActive, now, timeoutMs)) this.given.delete(id);
    if (this.given.size === 0) this.given = undefined;
  }

  /**
   * True when no session has had activity for a whole window (so the library's own has
   * expired too: it started no later than its last activity) or has a call in flight.
   */
  idle(now: number, timeoutMs: number): boolean {
    if (this.own.reserved !== 0 || !windowOver(this.own.lastActive, now, timeoutMs)) return false;
    for (const s of this.given?.values() ?? []) if (s.reserved !== 0 || !windowOver(s.lastActive, now, timeoutMs)) return false;
    return true;
  }

  clear(now: number): void {
    this.given = undefined;
    this.own = new Session(randomUUID(), now);
  }
}
