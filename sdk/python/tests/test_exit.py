"""At interpreter exit the queue is delivered without a shutdown() call, and a service that is
down does not hang the exit beyond shutdown_timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from .support import FaultProxy, Product, near

SCRIPT = textwrap.dedent("""
    import os, sys
    from meterline import Meter
    m = Meter(api_key=os.environ["KEY"], base_url=os.environ["URL"], flush_interval=3600, shutdown_timeout=1)
    m.record(sys.argv[1], model="m", input_tokens=1000)
    print("recorded")
""")


# Records, shuts down, records again (a serverless handler's pattern), then ends.
AFTER_SHUTDOWN = textwrap.dedent("""
    import os, sys
    from meterline import Meter
    m = Meter(api_key=os.environ["KEY"], base_url=os.environ["URL"], flush_interval=3600, shutdown_timeout=5)
    m.record(sys.argv[1], model="m", input_tokens=1000)
    assert m.shutdown()
    m.record(sys.argv[1], model="m", input_tokens=2000)
    print("recorded")
""")


# Shuts down against a service that is down, then ends: exit does not try the same events again.
SHUTDOWN_FAILS = textwrap.dedent("""
    import os, sys
    from meterline import Meter
    m = Meter(api_key=os.environ["KEY"], base_url=os.environ["URL"], flush_interval=3600, shutdown_timeout=1)
    m.record(sys.argv[1], model="m", input_tokens=1000)
    assert not m.shutdown()
    print("recorded")
""")


# The user's plan fails to load (one 503), so its usage is held, unpriced; then the process ends.
HELD = textwrap.dedent("""
    import asyncio, os, sys
    from meterline import AsyncMeter, Meter
    kw = dict(api_key=os.environ["KEY"], base_url=os.environ["URL"], flush_interval=3600, shutdown_timeout=5)
    if sys.argv[2] == "async":
        m = AsyncMeter(**kw)
        asyncio.run(m.record(sys.argv[1], model="m", input_tokens=1000))
    else:
        m = Meter(**kw)
        m.record(sys.argv[1], model="m", input_tokens=1000)
    assert m.stats.held == 1, m.stats
    print("recorded")
""")


# A service that answers slowly: start() finds it unreachable (its health check takes startup_timeout), so each new
# user's first load goes to the load workers (4) without a wait, each taking up to startup_timeout; then the
# process ends. Prints when its own work ended (Unix seconds), so that the exit's own time can be measured.
SLOW_LOADS = textwrap.dedent("""
    import os, sys, time
    from meterline import Meter
    m = Meter(api_key=os.environ["KEY"], base_url=os.environ["URL"], flush_interval=3600, startup_timeout=2,
              shutdown_timeout=1)
    assert not m.start().healthy
    for i in range(24):
        m.record(f"{sys.argv[1]}-{i}", model="m", input_tokens=1000)
    print("recorded", time.time())
""")


def run(user: str, url: str, key: str, script: str = SCRIPT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KEY": key, "URL": url}
    return subprocess.run(
        [sys.executable, "-c", script, *user.split(" ")], env=env, capture_output=True, text=True, timeout=60
    )


def test_exit_delivers_what_is_queued(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 10, "cost_rates": {"m": {"input": 1, "output": 1}}})
    r = run(user, product.url, product.key)
    assert r.returncode == 0 and "recorded" in r.stdout, r.stderr
    assert near(product.usage(user)["total_cost"], 1.0)


def test_exit_with_the_service_down_ends_within_shutdown_timeout(product: Product, proxy: FaultProxy) -> None:
    user = product.create_user()
    proxy.down()
    r = run(user, proxy.api_url, product.key)
    # It ends (subprocess.run's timeout would raise otherwise) and says what it could not deliver.
    assert r.returncode == 0, r.stderr
    assert "could not be delivered" in r.stderr


def test_exit_delivers_what_was_recorded_after_shutdown(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 10, "cost_rates": {"m": {"input": 1, "output": 1}}})
    r = run(user, product.url, product.key, AFTER_SHUTDOWN)
    assert r.returncode == 0 and "recorded" in r.stdout, r.stderr
    assert near(product.usage(user)["total_cost"], 3.0)


def test_exit_after_a_shutdown_that_could_not_deliver_tries_nothing_again(product: Product, proxy: FaultProxy) -> None:
    user = product.create_user()
    proxy.down()
    r = run(user, proxy.api_url, product.key, SHUTDOWN_FAILS)
    assert r.returncode == 0 and "recorded" in r.stdout, r.stderr
    # Said once, by the explicit shutdown(): exit stays within one shutdown_timeout.
    assert r.stderr.count("could not be delivered") == 1, r.stderr


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_exit_prices_and_delivers_usage_held_for_a_plan_that_failed_to_load(
    product: Product, proxy: FaultProxy, kind: str
) -> None:
    user = product.create_user({"max_spend_per_period": 10, "cost_rates": {"m": {"input": 1, "output": 1}}})
    proxy.inject(r"GET .*/session", "status", 503)
    r = run(f"{user} {kind}", proxy.api_url, product.key, HELD)
    assert r.returncode == 0 and "recorded" in r.stdout, r.stderr
    # Priced under the plan loaded at exit ($1 for 1,000 tokens), not sent at $0 nor left behind.
    assert near(product.usage(user)["total_cost"], 1.0), r.stderr
    assert proxy.count(r"GET .*/session") == 2


def test_exit_with_loads_queued_against_a_slow_service_ends_within_shutdown_timeout(
    product: Product, proxy: FaultProxy
) -> None:
    # Loads queued on a thread pool ran one after another before any atexit hook (24 loads of 2 s on 4 workers:
    # 12 s), past shutdown_timeout (1 s), and the exit hook that delivers the queue ran only after them.
    proxy.hold(r"GET /(health|users/.*/session)")
    try:
        r = run(f"u-{uuid.uuid4()}", proxy.api_url, product.key, SLOW_LOADS)
        ended = time.time()
    finally:
        proxy.release()
    assert r.returncode == 0 and "recorded" in r.stdout, r.stderr
    exit_took = ended - float(r.stdout.split()[-1])
    # shutdown_timeout, and the interpreter's own teardown.
    assert exit_took < 4, f"the exit took {exit_took:.1f} s\n{r.stderr}"
    assert "could not be delivered" in r.stderr
