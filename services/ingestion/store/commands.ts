/**
 * Statements per write command: the embedded database holds its single writer for a whole
 * command (about 0.7 ms a statement), so a command stays short enough not to keep other
 * writers waiting long.
 */
export const STATEMENTS_PER_COMMAND = 200;

/** `items` in parts of at most `size` (a command's statements). */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
