/**
 * The time the library reads for gates, windows and usage timestamps. Tests of calendar windows
 * move it (src/internal.ts `setClock`) to cross a midnight without waiting for one; nothing
 * else sets it.
 */
let read: () => number = Date.now;

export function now(): number {
  return read();
}

/** Testing only: the library's clock, or Date.now again with no argument. */
export function setClock(clock?: () => number): void {
  read = clock ?? Date.now;
}
