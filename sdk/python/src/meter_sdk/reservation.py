"""A checked call in flight: what ``reserve()`` returns. With the plan's pre_call_estimate it holds
the call's estimated cost (and tokens) against the limits until committed or released."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from .types import GuardResult, UsageEvent

if TYPE_CHECKING:
    from .sessions import Session
    from .state import UserEntry


@dataclass(slots=True)
class Hold:
    entry: UserEntry
    session: Session
    model: str | None
    cost: float
    tokens: float
    metadata: dict[str, Any] | None
    lease: str | None = None


class Ledger(Protocol):
    def _settle(
        self,
        hold: Hold,
        input_tokens: int,
        output_tokens: int,
        tool_calls: list[str] | None,
        metadata: dict[str, Any] | None,
    ) -> UsageEvent: ...
    def _unhold(self, hold: Hold) -> None: ...


class Reservation:
    """Use as a context manager: the estimate is given back if the block raises or never commits."""

    __slots__ = ("_hold", "_ledger", "_lock", "_state", "model", "result", "session_id", "user_id")

    def __init__(self, ledger: Ledger, hold: Hold, result: GuardResult) -> None:
        self._ledger = ledger
        self._hold = hold
        self._state = "open"
        self._lock = threading.Lock()
        self.user_id = hold.entry.user_id
        self.session_id = hold.session.id
        self.model = hold.model
        self.result = result

    def commit(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        tool_calls: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> UsageEvent:
        """Records the call's real usage and gives back the estimate. Once only; not after release()."""
        with self._lock:
            if self._state != "open":
                raise RuntimeError(f"reservation already {self._state}")
            event = self._ledger._settle(self._hold, input_tokens, output_tokens, tool_calls, metadata)
            self._state = "committed"
            return event

    def release(self) -> None:
        """Nothing is recorded and the estimate is given back. Idempotent; no effect after commit()."""
        with self._lock:
            if self._state != "open":
                return
            self._state = "released"
        self._ledger._unhold(self._hold)

    @property
    def open(self) -> bool:
        return self._state == "open"

    def __enter__(self) -> Reservation:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    async def __aenter__(self) -> Reservation:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
