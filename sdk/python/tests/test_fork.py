"""os.fork() (gunicorn preload, Celery prefork): the child gets a delivery thread of its own and
sends nothing twice; the parent keeps delivering its own events."""

from __future__ import annotations

import os
import sys

import pytest

from meterline import Meter

from .support import FaultProxy, Product, near

PRICED = {"cost_rates": {"m": {"input": 1, "output": 1}}}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_a_forked_child_delivers_its_own_events_and_none_of_the_parents(product: Product, proxy: FaultProxy) -> None:
    user = product.create_user({"max_spend_per_period": 1000, **PRICED})
    m = Meter(api_key=product.key, base_url=proxy.api_url, flush_interval=0.2)
    m.guard(user)
    # Queued in the parent before the fork: the parent's to send, not the child's.
    m.record(user, model="m", input_tokens=1000)
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            m.record(user, model="m", input_tokens=2000)
            # Delivered by the child's own thread, without flush().
            import time

            deadline = time.monotonic() + 20
            while m.stats.sent < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            code = 0 if m.stats.sent == 1 and m.stats.queued == 0 else 2
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert m.flush(timeout=30)
    m.record(user, model="m", input_tokens=4000)
    assert m.flush(timeout=30)
    usage = product.usage(user)
    assert near(usage["total_cost"], 7.0) and usage["total_tokens"] == 7000
    # Each event sent once: the parent's first, the child's, the parent's second.
    sent = [e["id"] for batch in proxy.sent(r"POST /events/batch") for e in batch]
    assert len(sent) == len(set(sent)) == 3
    m.shutdown()
