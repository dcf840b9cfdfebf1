import type { IngestionDeps } from "../deps.ts";
import { readCounter, type CounterDoc, type StoredCounterDoc } from "../store/counters.ts";
import type { WindowDoc } from "../windows/store.ts";

/** What readUserDocuments read: a field is undefined when it was not asked for, null when the document does not exist. */
export interface UserDocuments {
  counter?: CounterDoc | null;
  windows?: WindowDoc | null;
}

/**
 * A user's period counter and window document, those asked for (a null id: not this one). Both
 * live in the "counters" collection (userWindowDocId), so both together are one command.
 */
export async function readUserDocuments(deps: Pick<IngestionDeps, "counters" | "windows">, counterId: string | null, windowsId: string | null): Promise<UserDocuments> {
  if (counterId !== null && windowsId !== null) {
    const { windows, other } = await deps.windows.getWith<StoredCounterDoc>(windowsId, counterId);
    return { counter: other && readCounter(other), windows };
  }
  if (counterId !== null) return { counter: await deps.counters.get(counterId) };
  if (windowsId !== null) return { windows: await deps.windows.get(windowsId) };
  return {};
}
