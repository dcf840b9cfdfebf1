"""One Python client replica for the budget-lease tests (sdk/python/window-leases.test.ts), the twin of
bench/lease-replica.ts: a Meter (LEASE_KIND=sync, LEASE_CONCURRENCY threads) or an AsyncMeter (LEASE_KIND=async,
that many tasks) making model calls for one user, each with a pre-call estimate, until refused for
LEASE_STOP_AFTER_MS in a row, or with LEASE_UNTIL_MINUTE_PLUS=<ms> until that long into the minute after the
start. Prints "ready" once the user's view is loaded and begins when a line comes on stdin; then prints one JSON
line of figures: calls, refused, delivered, lease_requests, admitted (epoch ms of each admitted call), reasons
("<gate_reason> <resets_at>" of the refusals)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys
import threading
import time
from typing import Any

from meterline import AsyncMeter, LimitExceededError, Meter

USER = os.environ["LEASE_USER"]
KIND = os.environ.get("LEASE_KIND", "sync")
CONCURRENCY = int(os.environ.get("LEASE_CONCURRENCY", "5"))
STOP_AFTER = float(os.environ.get("LEASE_STOP_AFTER_MS", "1500")) / 1000
UNTIL_PLUS = os.environ.get("LEASE_UNTIL_MINUTE_PLUS")
CALL: dict[str, Any] = {"model": "m", "input_tokens": 1000}
OPTIONS: dict[str, Any] = {
    "api_key": os.environ["METER_API_KEY"],
    "base_url": os.environ["METER_BASE_URL"],
    "leases": os.environ.get("LEASE_ON", "true") == "true",
    "lease_idle": 0.3,
    "flush_interval": 0.2,
    # On a busy machine the view and the last deliveries take seconds: wait for them.
    "startup_timeout": 30.0,
    "max_queue_size": 1_000_000,
    "shutdown_timeout": 600.0,
    "logger": logging.getLogger("replica.quiet"),
}
logging.getLogger("replica.quiet").disabled = True


class Figures:
    def __init__(self, until: float) -> None:
        self.until = until
        self.lock = threading.Lock()
        self.calls = 0
        self.refused = 0
        self.admitted: list[float] = []
        self.reasons: set[str] = set()

    def admit(self) -> None:
        with self.lock:
            self.admitted.append(time.time() * 1000)

    def refuse(self, err: LimitExceededError) -> None:
        with self.lock:
            self.refused += 1
            self.reasons.add(f"{err.result.gate_reason} {err.result.resets_at}")

    def done(self) -> None:
        with self.lock:
            self.calls += 1


def until_of(began: float) -> float:
    if UNTIL_PLUS is None:
        return float("inf")
    return began - began % 60 + 60 + float(UNTIL_PLUS) / 1000


def ready() -> None:
    print("ready", flush=True)
    sys.stdin.readline()


def run_sync() -> tuple[Figures, Meter]:
    m = Meter(**OPTIONS)
    m.start()
    m.guard(USER, model="m")
    state = m.state(USER)
    if state is None or state.plan == "none":
        raise RuntimeError(f"the view of {USER} did not load")
    ready()
    f = Figures(until_of(time.time()))

    def worker() -> None:
        refused_since: float | None = None
        while time.time() < f.until:
            try:
                r = m.reserve(USER, **CALL)
            except LimitExceededError as err:
                f.refuse(err)
                refused_since = refused_since or time.time()
                if UNTIL_PLUS is None and time.time() - refused_since >= STOP_AFTER:
                    return
                time.sleep(0.1)
                continue
            f.admit()
            refused_since = None
            time.sleep(0.002 + random.random() * 0.008)  # the model call
            r.commit(input_tokens=1000, output_tokens=500)
            f.done()

    threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return f, m


async def run_async() -> tuple[Figures, AsyncMeter]:
    m = AsyncMeter(**OPTIONS)
    await m.start()
    await m.guard(USER, model="m")
    state = m.state(USER)
    if state is None or state.plan == "none":
        raise RuntimeError(f"the view of {USER} did not load")
    await asyncio.to_thread(ready)
    f = Figures(until_of(time.time()))

    async def worker() -> None:
        refused_since: float | None = None
        while time.time() < f.until:
            try:
                r = await m.reserve(USER, **CALL)
            except LimitExceededError as err:
                f.refuse(err)
                refused_since = refused_since or time.time()
                if UNTIL_PLUS is None and time.time() - refused_since >= STOP_AFTER:
                    return
                await asyncio.sleep(0.1)
                continue
            f.admit()
            refused_since = None
            await asyncio.sleep(0.002 + random.random() * 0.008)  # the model call
            r.commit(input_tokens=1000, output_tokens=500)
            f.done()

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return f, m


def main() -> None:
    if KIND == "async":

        async def both() -> tuple[Figures, bool, int]:
            f, m = await run_async()
            requests = m.stats.lease_requests or 0
            delivered = await m.shutdown()
            return f, delivered, requests

        f, delivered, requests = asyncio.run(both())
    else:
        f, sm = run_sync()
        requests = sm.stats.lease_requests or 0
        delivered = sm.shutdown()
    line = {
        "calls": f.calls,
        "refused": f.refused,
        "delivered": delivered,
        "lease_requests": requests,
        "admitted": f.admitted,
        "reasons": sorted(f.reasons),
    }
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
