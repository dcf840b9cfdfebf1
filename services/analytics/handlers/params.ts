import { characters } from "@meter/lib/characters";
import { rpcError } from "@meter/lib/errors";
import type { SourceFilter } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { SOURCES, type Source } from "../domain/rollup.ts";
import { DAYS_DEFAULT, DAYS_MAX, DAYS_MIN, lookback, TOP_USERS_DEFAULT, TOP_USERS_MAX, type DayWindow } from "../domain/windows.ts";
import type { AnalyticsDeps } from "../deps.ts";
import { readWindow } from "../flows/queries.ts";
import type { DayDoc } from "../store/rollups.ts";
import { scopeOf, type Scope } from "../domain/scopes.ts";

/** Request checks shared by the query handlers; proto3's 0 means "not sent", so the default. */

export function daysOf(req: { days: number }): number {
  if (req.days === 0) return DAYS_DEFAULT;
  if (!Number.isInteger(req.days) || req.days < DAYS_MIN || req.days > DAYS_MAX) {
    throw rpcError.invalid(`days must be an integer from ${DAYS_MIN} to ${DAYS_MAX}`);
  }
  return req.days;
}

export function limitOf(limit: number, name = "limit"): number {
  if (limit === 0) return TOP_USERS_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > TOP_USERS_MAX) {
    throw rpcError.invalid(`${name} must be an integer from 1 to ${TOP_USERS_MAX}`);
  }
  return limit;
}

export function sourceOf(filter: SourceFilter | undefined): Source | undefined {
  const s = filter?.source;
  if (s === undefined || s === "") return undefined;
  if (!(SOURCES as readonly string[]).includes(s)) throw rpcError.invalid(`source must be one of ${SOURCES.join(", ")}`);
  return s as Source;
}

/** The team filter (an external team id) when set. */
export function teamOf(req: { teamId?: string }): string | undefined {
  if (req.teamId === undefined) return undefined;
  if (req.teamId === "" || characters(req.teamId) > 255) throw rpcError.invalid("team_id must be 1-255 characters when set");
  return req.teamId;
}

/** What a request reads: its product's figures, or one team's with a team filter (domain/scopes.ts). */
export const requestScope = (req: { productId: string; teamId?: string }): Scope => scopeOf(req.productId, teamOf(req));

/** The window a request asks for (its `days`, today included) and the rollups of its days (its team's with a team filter); no user columns. */
export async function requestedDays(deps: AnalyticsDeps, req: { productId: string; days: number; teamId?: string }): Promise<{ w: DayWindow; docs: DayDoc[] }> {
  const w = lookback(deps.now(), daysOf(req));
  const { docs } = await readWindow(deps, requestScope(req), w.days, false);
  return { w, docs };
}
