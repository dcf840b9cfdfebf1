/**
 * What a hard gate's event says of prepaid credits that ran out: the client libraries put
 * `{balance, low_at}` in its metadata (`metadata.credits`, BUDGETS.md §3), and the webhook and
 * the end user's portal show it from there. Anything else in that key (a product's own metadata
 * sent by hand) is not taken for it.
 */
export function gateCredits(status: string, metadata: Record<string, unknown> | undefined): { balance: number; low_at: number | null } | undefined {
  const c = metadata?.credits;
  if (status !== "hard_gate" || typeof c !== "object" || c === null || Array.isArray(c)) return undefined;
  const { balance, low_at } = c as Record<string, unknown>;
  if (typeof balance !== "number") return undefined;
  return { balance, low_at: typeof low_at === "number" ? low_at : null };
}
