import { characters } from "@meter/lib/characters";
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { toUser } from "./mapping.ts";
import type { PlansDeps } from "../deps.ts";
import { checkExternalUserId } from "./common.ts";

/** The unique index on (product, external_user_id) makes concurrent sign-ups yield one user. */
export function createUser(deps: PlansDeps): ServiceImpl<typeof PlansService>["createUser"] {
  return async (req) => {
    const productId = req.productId;
    checkExternalUserId(req.externalUserId);
    if (req.name !== undefined && characters(req.name) > 255) throw rpcError.invalid("name must be at most 255 characters");
    const user = await deps.users.insert(productId, req.externalUserId, req.name ?? null);
    if (!user) throw rpcError.alreadyExists(`user "${req.externalUserId}" already exists`);
    return { user: toUser(user) };
  };
}
