"""Clients faster than the store, through a real all-in-one process holding at most one batch of 100 events
(``INGESTION_MAX_EVENTS_IN_FLIGHT``; busy.test.ts runs this file with it): batches beyond it are answered 429
with Retry-After, the clients keep them queued, send them again after it, and every event counts exactly once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from meterline import Meter, MeterAPIError

from .support import Product

PLAN = {"max_spend_per_period": 1_000_000, "cost_rates": {"m": {"input": 1, "output": 2}}}
CLIENTS = 6
BATCH = 100


def test_clients_beyond_the_bound_get_429s_back_off_and_deliver_every_event_once(product: Product) -> None:
    refusals: list[MeterAPIError] = []

    def on_error(err: BaseException) -> None:
        if isinstance(err, MeterAPIError) and err.status == 429:
            refusals.append(err)

    users = [product.create_user(PLAN) for _ in range(CLIENTS)]
    # Delivery driven by flush(): every client sends its batches at the same moment.
    meters = [
        Meter(api_key=product.key, base_url=product.url, flush_interval=3600, max_batch_size=BATCH, on_error=on_error)
        for _ in users
    ]
    tokens = dict.fromkeys(users, 0)
    cost = dict.fromkeys(users, 0)  # thousandths of a dollar
    events = dict.fromkeys(users, 0)
    try:
        # Rounds of three batches per client flushed at once, until the service has refused some (the
        # first round nearly always does: it holds one batch, six arrive together).
        for _ in range(10):
            for m, user in zip(meters, users, strict=True):
                for _ in range(3 * BATCH):
                    n = events[user]
                    inp, out = 1 + (n * 7) % 500, 1 + (n * 3) % 200
                    m.record(user, model="m", input_tokens=inp, output_tokens=out)
                    tokens[user] += inp + out
                    cost[user] += inp + 2 * out
                    events[user] += 1
            with ThreadPoolExecutor(CLIENTS) as pool:
                drained = list(pool.map(lambda m: m.flush(timeout=300), meters))
            assert drained == [True] * CLIENTS
            if any(m.stats.busy > 0 for m in meters):
                break

        assert sum(m.stats.busy for m in meters) > 0, "some batch was answered 429"
        assert refusals, "on_error was told of the 429"
        for err in refusals:
            assert err.retry_after is not None and 1.0 <= err.retry_after <= 60.0, err.retry_after
        for m, user in zip(meters, users, strict=True):
            s = m.stats
            assert (s.queued, s.sent, s.dropped, s.rejected) == (0, events[user], 0, 0)
            u = product.usage(user)
            assert u["total_tokens"] == tokens[user]
            assert abs(u["total_cost"] - cost[user] / 1000) < 1e-9, (u["total_cost"], cost[user] / 1000)
    finally:
        for m in meters:
            m.shutdown(timeout=1)
