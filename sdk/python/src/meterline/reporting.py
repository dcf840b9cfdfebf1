"""Where the client's problems go (warnings to the logger; what keeps metering off until someone fixes it, a
refused key or a wrong address, to its error level; both to on_error), and how the product's callbacks run:
one that raises stops neither the others nor the call, and an async one runs to its end, never dropped (_safely)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
from collections.abc import Awaitable, Callable
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

    def _registered(self, cbs: list[Callable[..., Any]], cb: Callable[..., Any]) -> None:
        """Adds a product's callback; the event loop running here, if any, is the one its coroutines run on when
        it fires from a thread that runs none (_safely)."""
        with contextlib.suppress(RuntimeError):
            self._callback_loop = asyncio.get_running_loop()
        cbs.append(cb)

    def _safely(self, cb: Callable[..., Any], *args: Any) -> None:
        try:
            r = cb(*args)
        except Exception as err:
            self._warn("a callback raised", err)
            return
        if inspect.isawaitable(r):
            self._await_callback(r)

    def _await_callback(self, r: Awaitable[Any]) -> None:
        """An async callback's coroutine runs: on the event loop running here, as a task; else, fired from a thread
        that runs none (Meter's load workers and delivery thread fire session starts and credits callbacks, an auto
        top-up), on the loop the client last saw (a callback registered, an awaitable call), thread-safely; else, no
        loop running anywhere, to its end in this thread (asyncio.run). Never dropped: a top-up hook must run."""
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is not None:
            task = asyncio.ensure_future(r, loop=here)
            task.add_done_callback(self._callback_done)
            return
        coro = r if inspect.iscoroutine(r) else _awaited(r)
        home = self._callback_loop
        if home is not None and home.is_running():
            try:
                future = asyncio.run_coroutine_threadsafe(coro, home)
            except RuntimeError:  # closed since: nothing runs it there
                pass
            else:
                future.add_done_callback(self._callback_done)
                return
        try:
            asyncio.run(coro)
        except Exception as err:
            self._warn("a callback raised", err)

    def _callback_done(self, future: asyncio.Future[Any] | concurrent.futures.Future[Any]) -> None:
        if not future.cancelled() and future.exception() is not None:
            self._warn("a callback raised", future.exception())


async def _awaited(r: Awaitable[Any]) -> Any:
    """An awaitable that is not a coroutine (a future, an object with __await__), as one."""
    return await r
