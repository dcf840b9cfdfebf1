import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { own } from "@meter/lib/own";
import type { IngestionDeps } from "../deps.ts";
import { NO_PLAN_CONFIG, normalizeModel, toNano } from "@meter/rules";
import { encodeKey } from "../domain/field-keys.ts";
import type { Ask } from "../leases/store.ts";
import { catchUp } from "../late-changes/follow.ts";
import { attribute } from "../domain/attribution.ts";
import { requireUser } from "./common.ts";
import { acquireWindows, userWindowHome } from "../windows/lease-request.ts";
import { MAX_LEASE_TTL_MS, leaseMessage, requireAsk, requireLeaseId, requireSpare } from "../leases/request.ts";
import { creditsInForce, teamCapWithPoolNano } from "../credits/view.ts";
import { acquireMemberWindows, acquireTeamSlice } from "../leases/team.ts";

/**
 * Grants the holder a slice of the user's current period spend cap (max_spend_per_period x
 * hard_gate_at) and, when a model is named whose tokens the plan caps, of that model's token
 * cap (max_tokens_per_period x hard_gate_at), in one write; and of each window of the plan's
 * `limits` asked for, in one write of the user's window document; and, with `team`, of the
 * period spend cap of the user's team, in one write of the team's period counter (leases/team.ts).
 * A user whose plan caps none of these (no period spend cap, no cap on the model's tokens, no
 * window) and who is in no capped team has nothing to lease: `limited` is false.
 */
export function acquireLease(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["acquireLease"] {
  return async (req) => {
    const productId = req.productId;
    const holder = requireLeaseId("holder", req.holder);
    const { need, want, needTokens, wantTokens } = requireAsk("", req);
    const { spare, spareTokens } = requireSpare("", req);
    const ttl = Number(req.ttlMs);
    if (ttl < 0 || ttl > MAX_LEASE_TTL_MS) throw rpcError.invalid(`ttl_ms must be between 0 and ${MAX_LEASE_TTL_MS}`);
    const ttlMs = ttl || deps.leases.ttlMs;
    const user = await requireUser(deps, productId, req.userId);
    await catchUp(deps, productId, req.userId, user);
    const now = deps.now();
    const a = attribute(productId, req.userId, user, now);
    const plan = a.plan;
    const hard = plan?.hardGateAt ?? NO_PLAN_CONFIG.hard_gate_at;
    const asks: Ask[] = [];
    const maxSpend = plan?.maxSpendPerPeriod;
    const spendLimited = maxSpend !== undefined && maxSpend !== null;
    // With credits the cap is allowance + drawn + balance (credits/view.ts): a settle turns
    // balance into drawn, so the cap does not move when usage is drawn. It rises by what the
    // period spent beyond the allowance while credits were off (read beside the account), which
    // does not move either while they are on.
    const [credits, spent] = spendLimited && plan?.creditsEnabled
      ? await Promise.all([creditsInForce(deps.credits, productId, req.userId, plan, a.period.start, now), deps.counters.spends([a.counterId])])
      : [null, null];
    const capNano = credits?.cap ? credits.cap(spent?.get(a.counterId)?.uncredited ?? 0).capNano : toNano(maxSpend!);
    // Money in whole nano-dollars, as the counter holds it.
    if (spendLimited) asks.push({ dim: null, cap: Math.round(capNano * hard), need: toNano(need), want: toNano(want), spare: toNano(spare) });
    const model = req.model === undefined ? undefined : normalizeModel(req.model, plan?.pricing ?? null);
    const tokenLimit = model === undefined ? undefined : own(plan?.modelLimits, model);
    if (tokenLimit) asks.push({ dim: encodeKey(model!), cap: tokenLimit.maxTokensPerPeriod * hard, need: needTokens, want: wantTokens, spare: spareTokens });
    // The windows' slices live in the user's window document: granted beside the period's, each write conditional on its own document.
    const windowsAsked = acquireWindows({
      home: userWindowHome(deps.leases.windows, productId, req.userId),
      plan,
      period: a.period,
      holder,
      asks: req.windows,
      ttlMs,
      graceMs: deps.leases.graceMs,
      now,
    });
    // The member-scope windows of the team plan are counted in the user's window document too: granted after the user's own (each write is conditional on that document's version).
    const memberAsked =
      req.memberWindows.length === 0
        ? Promise.resolve([])
        : windowsAsked.then(() =>
            acquireMemberWindows({ store: deps.leases.windows, productId, userId: req.userId, user, holder, ttlMs, graceMs: deps.leases.graceMs, now }, req.memberWindows),
          );
    memberAsked.catch(() => {});
    // The team's slice lives in the team's period counter: granted beside the user's, conditional on its own document.
    const teamAsked = req.team ? acquireTeamSlice(
          {
            stores: deps.leases,
            productId,
            user,
            holder,
            ttlMs,
            graceMs: deps.leases.graceMs,
            now,
            capWithPool: (t) => teamCapWithPoolNano(deps.credits, productId, t, now),
          },
          req.team,
        ) : undefined;
    if (asks.length === 0) {
      const [windows, team, memberWindows] = await Promise.all([windowsAsked, teamAsked, memberAsked]);
      // A plan with windows is limited whatever this request asked of them: a client that sent
      // none (its call's window had just ended) and heard "nothing to lease" would stop leasing
      // every window of the user for a while, and its replicas together pass the limits.
      const leased = [...windows, ...memberWindows, ...(team?.windows ?? [])].some((w) => w.limited);
      if (!plan?.limits.length && !leased && !team?.spendLimited && !team?.tokens) return { limited: false };
      const lease = leaseMessage(holder, { granted: 0, spent: 0, expires_at: new Date(now.getTime() + ttlMs) }, { ttlMs, periodEnd: a.period.end, spendLimited });
      return { limited: true, lease: { ...lease, windows, team, memberWindows } };
    }
    const ref = { id: a.counterId, productId, userId: req.userId, start: a.period.start, end: a.period.end };
    const [view, windows, team, memberWindows] = await Promise.all([
      deps.leases.store.acquire(ref, { holder, asks, ttlMs, graceMs: deps.leases.graceMs, now }),
      windowsAsked,
      teamAsked,
      memberAsked,
    ]);
    const lease = leaseMessage(holder, view.lease, {
      ttlMs,
      periodEnd: a.period.end,
      spendLimited,
      spend: spendLimited ? view.grants[0] : undefined,
      model: tokenLimit ? { name: model!, grant: view.grants[asks.length - 1] } : undefined,
    });
    return { limited: true, lease: { ...lease, windows, team, memberWindows } };
  };
}
