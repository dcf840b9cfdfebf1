import { keyStore } from "./api/client.ts";
import {
  creditLedgerRead,
  creditsRead,
  endpointsRead,
  gateEventsFilter,
  gateEventsRead,
  keysRead,
  lastSessionSpendRead,
  ledgerLimit,
  limitsRead,
  overviewReads,
  overviewWindow,
  planSubscribersRead,
  plansRead,
  sessionRead,
  usagePeriod,
  userRead,
  userUsageRead,
  usersFilter,
  usersRead,
  type Read,
} from "./api/reads.ts";

/** The reads the screen at `path` (below /console) makes when it opens, with the state in its URL. */
export function arrivalReads(path: string, params: URLSearchParams): Read[] {
  if (path === "/") return Object.values(overviewReads(overviewWindow(params)));
  if (path === "/users") return [plansRead(), usersRead(usersFilter(params))];
  if (path === "/plans") return [plansRead(), planSubscribersRead()];
  if (path === "/keys") return [keysRead()];
  if (/^\/webhooks(\/[^/]+)?$/.test(path)) return [endpointsRead()];
  const user = /^\/users\/([^/]+)$/.exec(path);
  if (user) {
    // An address typed or pasted with a stray "%" (users/50%off) is no encoding: its id as written
    // (the screen reads it the same way, app.tsx addressedId).
    let id = user[1]!;
    try {
      id = decodeURIComponent(id);
    } catch {
      // kept as written
    }
    // Also the reads the screen makes only once others answered (the ledger once the balance
    // shows grants, the last session's spend once the plan shows a session cap, the plans for the
    // subscription form): asked now, each costs at worst one small unused read, instead of
    // waiting for the app to be evaluated and rendered before it is asked.
    return [
      userRead(id),
      sessionRead(id),
      limitsRead(id),
      creditsRead("user", id),
      creditLedgerRead("user", id, ledgerLimit(params), params.get("lcursor") ?? undefined),
      userUsageRead(id, usagePeriod(params)),
      gateEventsRead(id, gateEventsFilter(params), params.get("gcursor") ?? undefined),
      plansRead(),
      lastSessionSpendRead(id),
    ];
  }
  return [];
}

/** A read already on its way: the app's cache takes its answer instead of asking again. */
export interface Started {
  read: Read;
  answer: Promise<unknown>;
}

/**
 * The reads of the screen this document opens on, started when this module is evaluated: the
 * first of the app's modules to be, so that the calls travel while the rest of the app is
 * evaluated and renders (the app's first render would start them only after its first paint).
 * None without a key (the sign-in screen).
 */
function start(): Started[] {
  if (!keyStore.get()) return [];
  const path = location.pathname.replace(/^\/console/, "").replace(/(.)\/$/, "$1") || "/";
  return arrivalReads(path, new URLSearchParams(location.search)).map((read) => ({ read, answer: read.queryFn() }));
}

export const started = start();
