import { keyStore } from "./api/client.ts";
import {
  creditsRead,
  endpointsRead,
  gateEventsFilter,
  gateEventsRead,
  keysRead,
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
    const id = decodeURIComponent(user[1]!);
    return [userRead(id), sessionRead(id), limitsRead(id), creditsRead("user", id), userUsageRead(id, usagePeriod(params)), gateEventsRead(id, gateEventsFilter(params), params.get("gcursor") ?? undefined)];
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
