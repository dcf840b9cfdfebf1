"""Prepaid credits against the period cap (BUDGETS.md section 3), as rules/credits.ts defines them, and a user's
credits as the library keeps them (the TypeScript client's credits.ts). Cases: rules/cases.json, section
``credits``.

With credits enabled and an allowance (``max_spend_per_period``), the period spend cap is the allowance plus what
the period drew plus the balance: the ``total_spend`` dimension's ``max``. Only a grant, a void or an expiry moves
it, so locally the balance is what that cap leaves after the period's spend: spend past the allowance lowers it
call by call, and a newer view of the same cap can only lower it further (its spend merges as the larger).
Crossings of the low mark and of 0, and the expiries the view listed, become the callbacks' events, once per
process. Money in dollars, computed in whole nano-dollars (money.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .money import to_dollars, to_nano
from .periods import parse_time
from .types import CreditsEvent, LimitCredits, PlanConfig


def credit_cap(allowance: float | None, drawn: float, balance: float) -> float | None:
    """allowance + drawn + balance; a None allowance is unlimited and draws nothing: None."""
    if allowance is None:
        return None
    return to_dollars(to_nano(allowance) + to_nano(drawn) + to_nano(balance))


def credits_drawn(cap: float, allowance: float, balance: float) -> float:
    """What the period drew, read back from a cap and a balance reported together; never below 0. It includes what
    the period spent past the allowance before the user moved to a plan with credits, which is never drawn but
    raises the cap as much (the service's docs/api.md, "Selling credits")."""
    return to_dollars(max(0, to_nano(cap) - to_nano(allowance) - to_nano(balance)))


def credit_balance(cap: float, allowance: float, spend: float) -> float:
    """The balance after ``spend`` in the period under ``cap``: spend within the allowance draws nothing. Below 0:
    an overdraft."""
    return to_dollars(to_nano(cap) - max(to_nano(allowance), to_nano(spend)))


def blocked_by_credits(gate_reason: str | None, status: str, current_value: float, allowance: float | None) -> bool:
    """The period cap blocks with credits enabled and the spend with the call's estimate (``current_value``) has
    reached the allowance: the allowance alone would have blocked, so the credits are what ran out."""
    return (
        status == "hard_gate"
        and gate_reason == "total_spend"
        and allowance is not None
        and to_nano(current_value) >= to_nano(allowance)
    )


# Plans with the credits' cap, shared by users with the same plan and cap (bounded; cleared when full).
_capped: dict[tuple[int, float, bool], tuple[PlanConfig, PlanConfig]] = {}


def with_cap(plan: PlanConfig, cap: float, allowance: float) -> PlanConfig:
    """The plan with another period spend cap: the one with the credits, over ``allowance`` (shared by users with the
    same one); prepaid when the allowance is 0 (PlanConfig.prepaid)."""
    prepaid = allowance == 0
    if plan.max_spend_per_period == cap and plan.prepaid == prepaid:
        return plan
    key = (id(plan), cap, prepaid)
    hit = _capped.get(key)
    if hit is not None and hit[0] is plan:
        return hit[1]
    if len(_capped) >= 1000:
        _capped.clear()
    capped = dataclasses.replace(plan, max_spend_per_period=cap, prepaid=prepaid)
    _capped[key] = (plan, capped)
    return capped


@dataclass(frozen=True, slots=True)
class CreditCrossing:
    low: bool
    depleted: bool
    armed: bool
    """Whether the next fall below the low mark fires again."""


def credit_crossing(before: float, after: float, low_at: float | None, armed: bool) -> CreditCrossing:
    """Low when the balance falls from at or above ``low_at`` to below it while armed (then disarmed: once per
    crossing; armed again at or above it); depleted when it goes from above 0 to 0 or below."""
    b, a = to_nano(before), to_nano(after)
    depleted = b > 0 >= a
    if low_at is None:
        return CreditCrossing(False, depleted, armed)
    mark = to_nano(low_at)
    low = armed and b >= mark > a
    return CreditCrossing(low, depleted, True if a >= mark else False if low else armed)


# What a user's credits went through: ("low" | "depleted" | "expired", the event).
CreditsNews = list[tuple[str, CreditsEvent]]


class UserCredits:
    """The credits of a user whose plan has them enabled with an allowance."""

    __slots__ = ("allowance", "armed", "cap", "expiries", "low_at", "pending", "seen")

    def __init__(self, allowance: float, cap: float, view: dict[str, Any], spend: float, now: float) -> None:
        self.allowance = allowance
        # The period cap with the credits: what the user's gates and leases see.
        self.cap = cap
        low = view.get("low_at")
        self.low_at: float | None = None if low is None else float(low)
        self.pending = float(view.get("pending") or 0)
        # Grants that expire, soonest first: (epoch seconds, grant id, what it had left). One past its expiry when
        # the view was read is already out of its balance.
        xs = []
        for x in view.get("expiries") or ():
            at, remaining = parse_time(str(x["at"])), float(x.get("remaining") or 0)
            if at > now and remaining > 0:
                xs.append((at, str(x["grant_id"]), remaining))
        self.expiries = sorted(xs)
        # The balance the callbacks last saw, and whether the low mark fires on the next fall below it.
        self.seen = self.balance(spend)
        self.armed = True

    def balance(self, spend: float) -> float:
        return credit_balance(self.cap, self.allowance, spend)

    def block(self, result_reason: str | None, status: str, current_value: float, spend: float) -> LimitCredits | None:
        """What a block by the period cap names, or None when the allowance did not run out."""
        if not blocked_by_credits(result_reason, status, current_value, self.allowance):
            return None
        return LimitCredits(self.balance(spend), self.low_at)

    def rolled(self, spend: float) -> None:
        """The period ended with no view of the next: its cap is the allowance plus the balance carried over."""
        cap = credit_cap(self.allowance, 0.0, self.balance(spend))
        assert cap is not None
        self.cap = cap

    @property
    def next_expiry(self) -> float:
        return self.expiries[0][0] if self.expiries else float("inf")

    def news(self, user_id: str, spend: float, now: float) -> tuple[CreditsNews, bool]:
        """Grants that expired by ``now`` (what they had left, as far as the balance still held it, leaves the cap),
        then the low mark and 0 crossed; and whether a grant expired (the view is then read again)."""
        news: CreditsNews = []
        expired = False
        while self.expiries and self.expiries[0][0] <= now:
            _, grant_id, remaining = self.expiries.pop(0)
            lost = to_dollars(min(to_nano(remaining), to_nano(max(0.0, self.balance(spend)))))
            self.cap = to_dollars(to_nano(self.cap) - to_nano(lost))
            expired = True
            if lost > 0:
                news.append(("expired", CreditsEvent(user_id, self.balance(spend), self.low_at, grant_id, lost)))
        after = self.balance(spend)
        c = credit_crossing(self.seen, after, self.low_at, self.armed)
        self.seen = after
        self.armed = c.armed
        if c.low:
            news.append(("low", CreditsEvent(user_id, after, self.low_at)))
        if c.depleted:
            news.append(("depleted", CreditsEvent(user_id, after, self.low_at)))
        return news, expired


def read_credits(
    plan: PlanConfig | None, view: dict[str, Any], spend: float, before: UserCredits | None, now: float
) -> UserCredits | None:
    """The credits a session view read at ``now`` gives (None when the plan has them disabled, has no allowance, or
    the service sends none). The balance the callbacks saw and the low mark's arming carry over from ``before``, so
    a refresh fires nothing twice and a grant that lifts the balance arms the mark again."""
    c = view.get("credits")
    if plan is None or not plan.credits_enabled or plan.max_spend_per_period is None or not isinstance(c, dict):
        return None
    allowance = plan.max_spend_per_period
    total = next(
        (d for d in view.get("limits") or () if isinstance(d, dict) and d.get("reason") == "total_spend"), None
    )
    balance = float(c.get("balance") or 0)
    if total is not None:
        cap = float(total["max"])
    else:
        # A view without the dimension list: what the period drew is taken to be what its spend past the allowance
        # needed.
        drawn = to_dollars(max(0, to_nano(spend) - to_nano(allowance)))
        cap = credit_cap(allowance, drawn, balance)  # type: ignore[assignment]
    credits = UserCredits(allowance, cap, c, spend, now)
    if before is not None:
        credits.seen = before.seen
        credits.armed = before.armed
    return credits
