import type { ServiceImpl } from "@connectrpc/connect";
import type { CreditNotice, WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { CREDIT_EVENT_TYPES } from "@meter/rules";
import { rpcError } from "@meter/lib/errors";
import type { WebhooksDeps } from "../deps.ts";
import { publishNotices } from "./common.ts";

function validate(n: CreditNotice): void {
  if (!n.productId) throw rpcError.invalid("credit event product_id is required");
  if (!n.userId && !n.teamId) throw rpcError.invalid("credit event user_id (or team_id for a team's pool) is required");
  if (!n.id) throw rpcError.invalid("credit event id is required");
  if (!(CREDIT_EVENT_TYPES as readonly string[]).includes(n.type)) throw rpcError.invalid(`type must be one of ${CREDIT_EVENT_TYPES.join(", ")}`);
}

/**
 * credits.low, credits.depleted and credits.expired: one event per notice id (ingestion decides
 * each in the write that changed the balance and names it after it), so a notice handed over
 * twice emits once. Data in dollars: {user_id, balance, low_at, grant_id?, amount?}; a team's
 * pool (BUDGETS.md §4) carries team_id instead of user_id.
 */
function creditEvent(n: CreditNotice) {
  return {
    type: n.type,
    key: `credits:${n.id}`,
    data: {
      ...(n.teamId !== undefined ? { team_id: n.teamId } : { user_id: n.userId }),
      balance: n.balance,
      low_at: n.lowAt ?? null,
      ...(n.grantId !== undefined && { grant_id: n.grantId }),
      ...(n.amount !== undefined && { amount: n.amount }),
    },
  };
}

export function publishCreditEvents(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["publishCreditEvents"] {
  return async (req) => {
    await publishNotices(deps, req.events, validate, creditEvent);
    return {};
  };
}
