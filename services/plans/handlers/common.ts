import { rpcError } from "@meter/lib/errors";
import type { PlansDeps } from "../deps.ts";
import { toUser } from "../mapping.ts";
import type { UserDoc } from "../store/users.ts";

export const EXTERNAL_USER_ID_MAX = 255;

/** Every request names its product; an empty id is a caller bug, not a lookup miss. */
export function requireProduct(productId: string): string {
  if (!productId) throw rpcError.invalid("product_id is required");
  return productId;
}

export function checkExternalUserId(id: string): void {
  if (id.length === 0 || id.length > EXTERNAL_USER_ID_MAX) {
    throw rpcError.invalid(`external_user_id must be 1-${EXTERNAL_USER_ID_MAX} characters`);
  }
}

export function userNotFound(externalUserId: string) {
  return rpcError.notFound(`user "${externalUserId}" not found`);
}

/** The user as an RPC message, with the current name of its plan. */
export async function userMessage(deps: PlansDeps, productId: string, user: UserDoc) {
  const plan = user.current ? await deps.plans.get(productId, user.current.plan_id) : null;
  return toUser(user, plan?.name);
}
