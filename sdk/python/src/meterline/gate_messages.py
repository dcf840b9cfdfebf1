"""The words of a gate (BUDGETS.md section 1): what a dimension at its soft or hard mark used and what the call
would add, as rules/dimensions.ts words them (the TypeScript client's messages, number for number)."""

from __future__ import annotations

import math

from .money import fixed, js_number, to_dollars, to_nano

_WINDOW_WORDS = {
    "minute": "this minute",
    "hour": "this hour",
    "day": "today",
    "week": "this week",
    "month": "this month",
    "period": "this period",
    "session": "this session",
}


def describe(
    hard: bool,
    reason: str,
    metric: str,
    window: str,
    duration: int | None,
    used: float,
    est: float,
    limit: float,
    scope: str | None = None,
) -> str:
    """What was used (settled calls plus what calls in flight hold) and, apart, what this call would add: the
    projection is not usage, and must not read as such. The TypeScript client's words, number for number;
    SPEC's three keep their messages word for word; a team plan's dimensions (``team:``) say "Team" (or
    "member limit ... of the team" for ``scope`` member)."""
    team = reason.startswith("team:")
    if team:
        reason = reason[5:]
    what = "limit reached" if hard else "approaching the limit"

    def share(x: float) -> str:
        return f"{math.floor(x / limit * 100 + 0.5) if limit > 0 else 100}%"

    def money_after(x: float) -> str:
        total = to_dollars(to_nano(used) + to_nano(x))
        return f"; this call's estimate of ${fixed(x, 4)} would bring it to ${fixed(total, 4)} ({share(used + x)})"

    def tokens_after(x: float) -> str:
        total = used + x
        return f"; this call's estimate of {js_number(x)} tokens would bring it to {js_number(total)} ({share(total)})"

    if reason in ("total_spend", "session_spend"):
        which = "Team spend" if team else "Spend" if reason == "total_spend" else "Session spend"
        head = f"{which} {what}: ${fixed(used, 4)} of ${fixed(limit, 2)} spent ({share(used)})"
        return head + money_after(est) if est > 0 else head
    if reason.startswith("model_limit:"):
        lead = "Team token" if team else "Token"
        head = (
            f"{lead} {what} for {reason[12:]} this period: {js_number(used)} of {js_number(limit)} tokens used "
            f"({share(used)})"
        )
        return head + tokens_after(est) if est > 0 else head
    name = f'"{reason[6:]}"' if reason.startswith("limit:") else reason
    when = _WINDOW_WORDS.get(window, f"this {window}")
    if window == "rolling":
        when = f"in the last {duration or 0} minutes"
    label = (
        f"limit {name}"
        if not team
        else f"member limit {name} of the team"
        if scope == "member"
        else f"team limit {name}"
    )
    head = f"{label[0].upper()}{label[1:]} reached" if hard else f"Approaching {label}"
    if metric == "spend":
        line = f"{head}: ${fixed(used, 4)} of ${fixed(limit, 2)} spent {when} ({share(used)})"
        return line + money_after(est) if est > 0 else line
    if metric == "tokens":
        line = f"{head}: {js_number(used)} of {js_number(limit)} tokens used {when} ({share(used)})"
        return line + tokens_after(est) if est > 0 else line
    return (
        f"{head}: {js_number(used)} of {js_number(limit)} requests made {when} ({share(used)}); "
        f"this call would make it {js_number(used + est)}"
    )
