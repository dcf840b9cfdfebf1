/**
 * Session windows (docs/api.md). Without a caller-given session id, a user has one session kept
 * by the client library whose window counts from its start: session_timeout_minutes after it,
 * the id rotates and the session's spend starts again at 0. A caller-given session is
 * forgotten after a whole window without activity. The end of a window is exclusive.
 */

/** Whether the window of `windowMs` that began at `since` is over at `now` (epoch ms). */
export function windowOver(since: number, now: number, windowMs: number): boolean {
  return now - since >= windowMs;
}

/** The session window of a plan, in milliseconds. */
export function sessionWindowMs(sessionTimeoutMinutes: number): number {
  return sessionTimeoutMinutes * 60_000;
}
