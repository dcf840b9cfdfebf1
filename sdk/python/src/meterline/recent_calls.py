"""What a user's calls of a model really cost lately: the default reservation of a call in flight
(reservation.py) is the typical one. Kept apart so the user state that holds these and the
reservation rule that reads them import it, not each other."""

from __future__ import annotations

# Real calls remembered per user and model for the default reservation.
TYPICAL_CALLS = 8


class RecentCalls:
    """The real cost and tokens of the last TYPICAL_CALLS calls of one user and model (a ring)."""

    __slots__ = ("_costs", "_next", "_tokens")

    def __init__(self) -> None:
        self._costs: list[float] = []
        self._tokens: list[float] = []
        self._next = 0

    def add(self, cost: float, tokens: float) -> None:
        if len(self._costs) < TYPICAL_CALLS:
            self._costs.append(cost)
            self._tokens.append(tokens)
        else:
            self._costs[self._next] = cost
            self._tokens[self._next] = tokens
        self._next = (self._next + 1) % TYPICAL_CALLS

    def typical(self) -> tuple[float, float]:
        """The typical call: the largest cost and the largest token count among the calls remembered."""
        return max(self._costs), max(self._tokens)
