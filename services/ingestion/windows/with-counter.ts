import { readCounter, type CounterDoc, type CounterStore, type StoredCounterDoc } from "../store/counters.ts";
import type { WindowDoc, WindowStore } from "./store.ts";

/**
 * An owner's (a user's, a team's) period counter and window document live in one collection
 * ("counters", "team_counters": windowDocId), so both together are one
 * command: a session's reads.
 */
export interface CounterAndWindowStores {
  counters: Pick<CounterStore, "get">;
  windows: Pick<WindowStore, "get" | "getWith">;
}

/** What readCounterAndWindows read: a field is undefined when it was not asked for, null when the document does not exist. */
export interface CounterAndWindows {
  counter?: CounterDoc | null;
  windows?: WindowDoc | null;
}

/** The counter and window document asked for (a null id: not this one), with one command. */
export async function readCounterAndWindows(stores: CounterAndWindowStores, counterId: string | null, windowsId: string | null): Promise<CounterAndWindows> {
  if (counterId !== null && windowsId !== null) {
    const { windows, other } = await stores.windows.getWith<StoredCounterDoc>(windowsId, counterId);
    return { counter: other && readCounter(other), windows };
  }
  if (counterId !== null) return { counter: await stores.counters.get(counterId) };
  if (windowsId !== null) return { windows: await stores.windows.get(windowsId) };
  return {};
}

/** A read started before the owner's attribution was known, of the documents its last session named. */
export interface EarlyRead {
  counterId: string | null;
  windowsId: string | null;
  docs: Promise<CounterAndWindows>;
}

/** Starts an early read; its failure is only seen by whoever uses it (readGuessed), never unhandled. */
export function readEarly(stores: CounterAndWindowStores, counterId: string | null, windowsId: string | null): EarlyRead {
  const docs = readCounterAndWindows(stores, counterId, windowsId);
  docs.catch(() => {});
  return { counterId, windowsId, docs };
}

/**
 * The counter `counterId` and, unless null, the window document `windowsId`: from the early
 * read where it read them, the rest with one command beside it (a wrong guess costs one read,
 * made in parallel, and is not waited for).
 */
export async function readGuessed(stores: CounterAndWindowStores, counterId: string, windowsId: string | null, early?: EarlyRead): Promise<{ counter: CounterDoc | null; windows: WindowDoc | null }> {
  const counterKnown = early?.counterId === counterId;
  const windowsKnown = early !== undefined && early.windowsId === windowsId;
  const rest = readCounterAndWindows(stores, counterKnown ? null : counterId, windowsKnown ? null : windowsId);
  const [first, then] = await Promise.all([counterKnown || (windowsKnown && windowsId !== null) ? early!.docs : ({} as CounterAndWindows), rest]);
  return {
    counter: (counterKnown ? first.counter : then.counter) ?? null,
    windows: windowsId === null ? null : ((windowsKnown ? first.windows : then.windows) ?? null),
  };
}
