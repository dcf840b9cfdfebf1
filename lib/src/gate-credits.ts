import { roundDollars } from "@meter/rules";

/**
 * What a hard gate's event says of prepaid credits that ran out: the client libraries put
 * `{balance, low_at}` in its metadata (`metadata.credits`, BUDGETS.md §3), and the webhook and
 * the end user's portal show it from there, as amounts: kept to the nano-dollar as every amount
 * the service sends. Anything else in that key (a product's own metadata sent by hand, a figure
 * that is not a finite number) is not taken for it.
 */
export function gateCredits(status: string, metadata: Record<string, unknown> | undefined): { balance: number; low_at: number | null } | undefined {
  const c = metadata?.credits;
  if (status !== "hard_gate" || typeof c !== "object" || c === null || Array.isArray(c)) return undefined;
  const { balance, low_at } = c as Record<string, unknown>;
  if (typeof balance !== "number" || !Number.isFinite(balance)) return undefined;
  return { balance: roundDollars(balance), low_at: typeof low_at === "number" && Number.isFinite(low_at) ? roundDollars(low_at) : null };
}
