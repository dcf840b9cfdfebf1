// A plan's prepaid-credit settings (BUDGETS.md §3): defaults and validation. Pure functions, no I/O.
import { BELOW_UNIT, belowUnit } from "@meter/rules";

/** What a plan without credits has: it reads and behaves as a plan did before credits. */
export const CREDIT_DEFAULTS: Readonly<{ credits_enabled: boolean; credits_low_at: number | null }> = Object.freeze({
  credits_enabled: false,
  credits_low_at: null,
});

export function creditProblems(v: { credits_enabled: boolean; credits_low_at: number | null }, prefix = ""): string[] {
  const problems: string[] = [];
  if (typeof v.credits_enabled !== "boolean") problems.push(`${prefix}credits_enabled must be true or false`);
  const low = v.credits_low_at;
  if (low !== null && !(Number.isFinite(low) && low >= 0 && low <= 1e9)) {
    problems.push(`${prefix}credits_low_at must be a number of dollars, 0-1e9, or null for never`);
  } else if (low !== null && belowUnit(low)) problems.push(`${prefix}credits_low_at ${BELOW_UNIT}`);
  return problems;
}
