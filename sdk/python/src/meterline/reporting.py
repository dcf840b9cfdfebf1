"""Where the client's problems go (warnings to the logger; what keeps metering off until someone fixes it, a
refused key or a wrong address, to its error level; both to on_error), and how the product's callbacks run:
one that raises stops neither the others nor the call, and a coroutine runs on the running loop."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable
from typing import Any

from .core_state import CoreState
from .credits import CreditsNews
from .errors import MeterAPIError, MeterAuthenticationError, MeterError
from .flow import Flow, Health
from .transport import address_hint, likely_bases


class Reporting(CoreState):
    def _warn(self, message: str, err: BaseException | None = None) -> None:
        try:
            self._logger.warning("[meter] %s%s", message, f": {err}" if err and str(err) != message else "")
            if err is not None and self._on_error is not None:
                self._on_error(err)
        except Exception:
            pass  # a broken logger must not break a call

    def _report_drops(self) -> None:
        """Tells on_error of a drop the queue logged under the lock (EventQueue.take_unreported). Without the lock."""
        err = self._queue.take_unreported()
        if err is not None and self._on_error is not None:
            with contextlib.suppress(Exception):  # a broken callback must not break a call
                self._on_error(err)

    def _error(self, message: str, err: BaseException) -> None:
        try:
            self._logger.error("[meter] %s", message)
            if self._on_error is not None:
                self._on_error(err)
        except Exception:
            pass

    def _key_refused(self, err: MeterAPIError) -> None:
        """The service refused the API key: logged as an error once per client, not once per user."""
        with self._lock:
            self._refused_key = MeterAuthenticationError(err.status, err.detail)
            if self._key_refused_logged:
                return
            self._key_refused_logged = True
        # The TypeScript library's words (reporting.ts keyRefused).
        what = "refused the API key" if err.status == 401 else "does not let this API key read what the library needs"
        fallback = (
            "users whose session is not loaded are hard-gated (fail_closed)"
            if self.fail_closed
            else "users whose session is not loaded run on permissive defaults"
        )
        self._error(
            f"the service {what} ({err.status}: {err.detail}); check api_key (or METER_API_KEY): it must be a key of "
            "the product (from POST /api/v1/products or POST /api/v1/keys; an ingest key is enough) that has not been "
            f"revoked or expired. Until it is fixed, no event is delivered (they are held, see stats) and {fallback}",
            err,
        )

    # ---- QueueHooks (with _warn and _key_refused above) ----

    def _misaddressed(self, err: MeterError) -> None:
        """Something answers at base_url, but not the API: a 404 of a delivery or of start()'s health check."""
        self._error(str(err), err)

    def _wrong_address(self) -> Flow[MeterError]:
        """Why nothing of the API answers at base_url, with the address to use when it can be found."""
        base = self._http.base
        candidates = likely_bases(base)
        found = None
        for b in candidates:
            if (yield Health(self.startup_timeout, b)) in ("ok", "degraded"):
                found = b
                break
        return MeterError(
            f"nothing of the Meter API answers at {base} (GET {base}/health: 404); {address_hint(base, found)}. "
            "Until it is fixed, no event "
            "is delivered and "
            + (
                "users whose session is not loaded are hard-gated (fail_closed)"
                if self.fail_closed
                else "users whose session is not loaded run on permissive defaults"
            ),
        )

    # ---- the product's callbacks ----

    def _fire(self, cbs: list[Callable[..., Any]], *args: Any) -> None:
        for cb in cbs:
            self._safely(cb, *args)

    def _fire_credits(self, news: CreditsNews) -> None:
        """The credits callbacks of what a user's credits went through (UserEntry.credit_news); outside the lock."""
        for kind, event in news:
            if kind == "low":
                self._fire(self._credits_low, event)
            elif kind == "depleted":
                self._fire(self._credits_depleted, event)
            else:
                self._fire(self._credits_expired, event)

    def _safely(self, cb: Callable[..., Any], *args: Any) -> None:
        try:
            r = cb(*args)
        except Exception as err:
            self._warn("a callback raised", err)
            return
        if inspect.isawaitable(r):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                if inspect.iscoroutine(r):
                    r.close()
                self._warn("an async callback was called outside an event loop; it did not run")
                return
            task = asyncio.ensure_future(r, loop=loop)
            task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._warn("a callback raised", task.exception())
