import { characters } from "@meter/lib/characters";
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService, User } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import type { PlansDeps } from "../deps.ts";
import { toUser } from "./mapping.ts";
import type { UserDoc } from "../store/users.ts";
import { EXTERNAL_USER_ID_MAX } from "./common.ts";

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;

/** Cursor: base64url of [kind ("u": users, "t": teams), external id of the page's last row]. Opaque to callers. */
export function encodeCursor(externalId: string, kind: "u" | "t" = "u"): string {
  return Buffer.from(JSON.stringify([kind, externalId])).toString("base64url");
}

export function decodeCursor(cursor: string, kind: "u" | "t" = "u"): string {
  try {
    const [k, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown[];
    if (k === kind && typeof id === "string" && id.length > 0 && characters(id) <= EXTERNAL_USER_ID_MAX) return id;
  } catch {
    // fall through
  }
  throw rpcError.invalid("cursor is not valid; pass next_cursor of the previous page unchanged");
}

/** A request's page size: 0 means DEFAULT_PAGE; INVALID_ARGUMENT outside 1-MAX_PAGE. */
export function pageSize(limit: number): number {
  const n = limit === 0 ? DEFAULT_PAGE : limit;
  if (n < 1 || n > MAX_PAGE) throw rpcError.invalid(`limit must be between 1 and ${MAX_PAGE}`);
  return n;
}

/** Users as RPC messages with the current names of their plans, read without the plans' maps (one read). */
export async function userMessages(deps: PlansDeps, productId: string, users: readonly UserDoc[]): Promise<User[]> {
  const names = await deps.plans.names(productId, users.flatMap((u) => (u.current ? [u.current.plan_id] : [])));
  return users.map((u) => toUser(u, u.current ? names.get(u.current.plan_id) : undefined));
}

/**
 * A page of the product's users in external id order, with the names of their plans (read
 * without the plans' maps, for the page's plans only). Without a plan: one `_id` range read of
 * the users. With a plan: its id from the product's plan names, one range read of the plan's
 * member list (PlanMemberStore) and one read of those users by `_id`, keeping those whose current subscription is on the plan (an
 * entry left behind by a change may name a user who left it: such a page can hold fewer than
 * `limit` users and still carry a cursor). One more row than the page is read to tell whether
 * another page follows.
 */
export function listUsers(deps: PlansDeps): ServiceImpl<typeof PlansService>["listUsers"] {
  return async (req) => {
    const productId = req.productId;
    const limit = pageSize(req.limit);
    if (characters(req.prefix) > EXTERNAL_USER_ID_MAX) throw rpcError.invalid(`prefix must be at most ${EXTERNAL_USER_ID_MAX} characters`);
    const after = req.cursor ? decodeCursor(req.cursor) : undefined;

    let users: UserDoc[];
    let last: string | undefined;
    let more: boolean;
    if (req.planName === undefined) {
      const rows = await deps.users.page(productId, req.prefix, after, limit + 1);
      more = rows.length > limit;
      users = rows.slice(0, limit);
      last = users.at(-1)?.external_user_id;
    } else {
      const planId = [...(await deps.plans.names(productId))].find(([, name]) => name === req.planName)?.[0];
      if (planId === undefined) return { users: [] };
      const ids = await deps.members.page(productId, planId, req.prefix, after, limit + 1);
      more = ids.length > limit;
      const listed = ids.slice(0, limit);
      last = listed.at(-1);
      users = (await deps.users.getMany(productId, listed)).filter((u) => u.current?.plan_id === planId);
    }
    return {
      users: await userMessages(deps, productId, users),
      nextCursor: more && last !== undefined ? encodeCursor(last) : undefined,
    };
  };
}
