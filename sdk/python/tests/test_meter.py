"""The client against the real stack over HTTP: loads, gates, reservations, metering, manual events."""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import threading
import time
import uuid
from datetime import datetime
from typing import Any

import pytest

from meterline import (
    GateContext,
    GuardResult,
    LimitExceededError,
    Meter,
    MeterError,
    MeterUnavailableError,
    UsageEvent,
    limit_body,
    limit_of,
    retry_after_seconds,
)
from meterline.clock import set_clock

from .support import FaultProxy, Product, eventually, near

PRICED = {"cost_rates": {"gpt-4o": {"input": 2.5, "output": 10}}, "default_tool_cost": 0.02}


def meter_for(p: Product, **kw: Any) -> Meter:
    return Meter(api_key=p.key, base_url=p.url, **kw)


def test_fail_closed_blocks_a_user_whose_plan_cannot_load(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 100, **PRICED})
    open_ = Meter(api_key="mk_wrong", base_url=product.url)
    assert open_.guard(user).status == "ok"
    closed = Meter(api_key="mk_wrong", base_url=product.url, fail_closed=True)
    with pytest.raises(LimitExceededError) as err:  # code that catches blocked calls still catches it
        closed.guard(user)
    # An outage, not a limit: 503 with a Retry-After, saying so.
    assert isinstance(err.value, MeterUnavailableError)
    assert err.value.status_code == 503 and err.value.result.gate_reason == "session_unavailable"
    assert "fail_closed" in str(err.value)
    assert "metering service is unavailable" in limit_body(err.value)["detail"]
    after = retry_after_seconds(err.value)
    assert after is not None and 1 <= after <= 5
    for m in (open_, closed):
        m.shutdown(timeout=1)


def test_records_are_priced_delivered_and_counted_exactly(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 100, **PRICED})
    m = meter_for(product)
    seen: list[UsageEvent] = []
    m.on_usage(seen.append)
    ev = m.record(user, model="gpt-4o-2024-08-06", input_tokens=1000, output_tokens=1000, tool_calls=["search"])
    assert ev.model == "gpt-4o" and near(ev.cost_tokens, 12.5) and near(ev.cost_tools, 0.02) and not ev.synced
    assert seen == [ev]
    assert m.flush()
    assert ev.synced
    u = product.usage(user)
    assert near(u["total_cost"], 12.52) and u["total_tokens"] == 2000
    st = m.state(user)
    assert st is not None and near(st.period_cost, 12.52) and st.period_tokens_by_model == {"gpt-4o": 2000}
    assert m.stats.sent == 1 and m.stats.queued == 0
    m.shutdown()


def test_soft_then_hard_gates_callbacks_in_order_and_one_that_raises_stops_nothing(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 1, **PRICED})
    m = meter_for(product)
    calls: list[str] = []

    def boom(r: GuardResult, c: GateContext) -> None:
        calls.append("boom")
        raise RuntimeError("callback bug")

    m.on_soft_gate(boom)
    m.on_soft_gate(lambda r, c: calls.append(f"soft:{r.gate_reason}:{c.user_id == user}"))
    m.on_hard_gate(lambda r, c: calls.append(f"hard:{r.gate_reason}"))
    assert m.guard(user, model="gpt-4o").status == "ok"
    m.record(user, model="gpt-4o", input_tokens=0, output_tokens=85)  # $0.85
    r = m.guard(user, model="gpt-4o")
    assert r.status == "soft_gate" and r.usage_pct == pytest.approx(0.85)
    m.record(user, model="gpt-4o", input_tokens=0, output_tokens=15)  # $1.00
    with pytest.raises(LimitExceededError) as err:
        m.guard(user, model="gpt-4o")
    assert err.value.result.status == "hard_gate" and err.value.status_code == 429
    assert calls == ["boom", "soft:total_spend:True", "hard:total_spend"]
    m.shutdown()


def test_soft_hard_and_blocked_within_5s_are_three_gate_events_later_ones_counted(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 1, **PRICED})
    warn = meter_for(product, blocking=False)
    block = meter_for(product)
    warn.record(user, model="gpt-4o", output_tokens=90)
    warn.guard(user)  # soft
    warn.guard(user)  # soft again: suppressed
    warn.record(user, model="gpt-4o", output_tokens=10)
    assert warn.guard(user).status == "hard_gate"  # not blocking: a hard gate, not blocked
    assert warn.flush()
    for _ in range(3):
        with pytest.raises(LimitExceededError):
            block.guard(user)
    assert block.flush()
    events = product.gate_events(user)
    kinds = sorted((e["status"], e["blocked"]) for e in events)
    assert kinds == [("hard_gate", False), ("hard_gate", True), ("soft_gate", False)], events
    m2 = meter_for(product)
    m2.record(user, model="gpt-4o", output_tokens=1)
    m2.shutdown()
    warn.shutdown()
    block.shutdown()


def test_two_conversations_at_their_session_caps_are_two_gate_events(product: Product) -> None:
    user = product.create_user({"max_spend_per_session": 1, **PRICED})
    m = meter_for(product)
    for conversation in ("c1", "c2"):
        m.record(user, model="gpt-4o", output_tokens=100, session_id=conversation)  # $1: at the cap
    for conversation in ("c1", "c2", "c1"):  # the second c1 is within 5 s of the first: not written
        with pytest.raises(LimitExceededError) as err:
            m.guard(user, session_id=conversation)
        assert err.value.result.gate_reason == "session_spend"
    assert m.flush()
    events = product.gate_events(user)
    assert sorted(e["session_id"] for e in events) == ["c1", "c2"], events
    m.shutdown()


def test_suppressed_gate_events_are_counted_in_the_next_ones_metadata(product: Product, proxy: Any) -> None:
    from meterline.admission import GATE_EVENT_INTERVAL

    user = product.create_user({"max_spend_per_period": 0, **PRICED})
    m = Meter(api_key=product.key, base_url=proxy.api_url)
    # The library's clock, stepped: the four guards fall within one interval however slow the machine is.
    now = [time.time()]
    set_clock(lambda: now[0])
    try:
        for _ in range(4):
            with pytest.raises(LimitExceededError):
                m.guard(user)
        eventually(lambda: m.state(user) is not None)
        now[0] += GATE_EVENT_INTERVAL + 0.1
        with pytest.raises(LimitExceededError):
            m.guard(user)
    finally:
        set_clock(None)
    assert m.flush()
    events = sorted(product.gate_events(user), key=lambda e: e["timestamp"])
    assert len(events) == 2
    wire = sorted((e for batch in proxy.sent("POST /gate-events/batch") for e in batch), key=lambda e: e["timestamp"])
    assert [e["metadata"].get("suppressed_events") for e in wire] == [None, 3]
    m.shutdown()


def test_a_cap_of_zero_blocks_every_call_and_no_plan_is_permissive(product: Product) -> None:
    zero = product.create_user({"max_spend_per_period": 0})
    free = product.create_user()
    stranger = f"nobody-{uuid.uuid4()}"
    m = meter_for(product)
    with pytest.raises(LimitExceededError):
        m.guard(zero)
    assert m.guard(free, model="gpt-4o").status == "ok"
    assert m.guard(stranger).status == "ok"
    ev = m.record(stranger, model="x", input_tokens=5)
    assert ev.cost_total == 0
    assert m.flush()
    m.shutdown()


def test_reserve_holds_the_estimate_and_commit_settles_it(product: Product) -> None:
    user = product.create_user(
        {"max_spend_per_period": 1, "pre_call_estimate": True, "pre_call_buffer_tokens": 40, **PRICED}
    )
    m = meter_for(product)
    # estimate: 0 input + 40 output tokens at $10/1K = $0.40
    a = m.reserve(user, model="gpt-4o", input_tokens=0)
    b = m.reserve(user, model="gpt-4o", input_tokens=0)
    with pytest.raises(LimitExceededError) as err:
        m.reserve(user, model="gpt-4o", input_tokens=0)
    assert "spent" in (err.value.result.message or "") and "estimate" in (err.value.result.message or "")
    ev = a.commit(input_tokens=0, output_tokens=10)
    assert near(ev.cost_total, 0.1)
    b.release()
    b.release()
    with pytest.raises(MeterError) as twice:
        b.commit()
    assert isinstance(twice.value, RuntimeError)
    # The block raising gives the estimate back.
    with pytest.raises(ZeroDivisionError), m.reserve(user, model="gpt-4o", input_tokens=0):
        1 / 0  # noqa: B018
    with m.reserve(user, model="gpt-4o", input_tokens=0) as r:
        r.commit(output_tokens=20)
    assert m.flush()
    assert near(product.usage(user)["total_cost"], 0.3)
    m.shutdown()


def test_caller_sessions_have_their_own_caps(product: Product) -> None:
    user = product.create_user({"max_spend_per_session": 0.5, **PRICED})
    m = meter_for(product)
    m.record(user, model="gpt-4o", output_tokens=50, session_id="conv-a")
    with pytest.raises(LimitExceededError):
        m.guard(user, session_id="conv-a")
    assert m.guard(user, session_id="conv-b").status == "ok"
    assert m.guard(user).status == "ok"
    m.shutdown()


def test_concurrent_first_calls_share_one_load_and_session_start_fires_once(product: Product, proxy: Any) -> None:
    user = product.create_user({"max_spend_per_period": 10})
    m = Meter(api_key=product.key, base_url=proxy.api_url)
    starts: list[str] = []
    m.on_session_start(lambda s: starts.append(s.plan))
    threads = [threading.Thread(target=m.guard, args=(user,)) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert proxy.count(r"GET /users/.*/session") == 1
    assert len(starts) == 1
    m.shutdown()


def test_a_plan_change_is_picked_up_by_refresh(product: Product) -> None:
    plan_id = product.create_plan(max_spend_per_period=100, **PRICED)
    user = product.create_user()
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    product.subscribe(user, plan_id, now - timedelta(days=1), now + timedelta(days=10))
    m = meter_for(product)
    m.record(user, model="gpt-4o", output_tokens=100)  # $1
    assert m.guard(user).status == "ok"
    assert product.api.patch(f"/config/plans/{plan_id}", {"max_spend_per_period": 1}).status_code == 200
    assert m.refresh(user)
    with pytest.raises(LimitExceededError):
        m.guard(user)
    m.shutdown()


def test_record_manual_is_priced_by_the_service_and_counted_once(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 100, **PRICED})
    m = meter_for(product)
    m.guard(user)
    seen: list[UsageEvent] = []
    m.on_usage(seen.append)
    a = m.record_manual(user, model="gpt-4o", input_tokens=1000, idempotency_key="k1", description="import")
    b = m.record_manual(user, model="gpt-4o", input_tokens=1000, idempotency_key="k1")
    assert a.id == b.id and near(a.cost, 2.5) and a.source == "manual"
    assert len(seen) == 1 and seen[0].synced
    st = m.state(user)
    assert st is not None and near(st.period_cost, 2.5)
    c = m.record_manual(user, cost=1.25)
    assert near(c.cost, 1.25)
    assert near(product.usage(user)["total_cost"], 3.75)
    with pytest.raises(TypeError):
        m.record_manual(user, cost=-1)
    m.shutdown()


def test_input_checks() -> None:
    m = Meter(api_key="k", base_url="http://127.0.0.1:1/api/v1", startup_timeout=0.2)
    with pytest.raises(TypeError):
        m.guard("")
    with pytest.raises(TypeError):
        m.record("u", input_tokens=-1)
    for session in ("", "s" * 256):
        with pytest.raises(TypeError, match="session_id"), m.user("u", session_id=session):
            pass
    # An empty idempotency key would dedupe nothing: a caller's key that came out empty is refused, not replaced.
    for key in ("", "k" * 256):
        with pytest.raises(TypeError, match="idempotency_key"):
            m.record_manual("u", cost=1, idempotency_key=key)
    with pytest.raises(TypeError):
        m.record("u", tool_calls="search")  # type: ignore[arg-type]
    # A value JSON cannot carry is refused when recorded, never queued to fail its whole batch.
    for bad in ({"at": datetime.now()}, {"ratio": float("nan")}, {"id": uuid.uuid4()}):
        with pytest.raises(TypeError, match="JSON"):
            m.record("u", input_tokens=1, metadata=bad)
        # Likewise where a gate event or a reservation takes metadata (a gate event's, or its usage event's at commit).
        with pytest.raises(TypeError, match="JSON"):
            m.guard("u", metadata=bad)
        with pytest.raises(TypeError, match="JSON"):
            m.reserve_now("u", metadata=bad)
    with pytest.raises(ValueError):
        Meter(api_key="k", base_url="http://127.0.0.1:1/api/v1", flush_interval=0)
    # A count is a whole number in range, refused rather than truncated (0.5 events a queue would drop every event,
    # 0.5 calls a lease would divide by zero) or clamped (the service takes 10,000 events a batch).
    options: list[dict[str, Any]] = [
        {"max_queue_size": 0.5},
        {"max_queue_size": 0},
        {"max_batch_size": 25_000},
        {"max_batch_size": 100.0},
        {"lease_calls": 0.5},
        {"lease_calls": True},
    ]
    for counts in options:
        with pytest.raises(ValueError, match=next(iter(counts))):
            Meter(api_key="k", base_url="http://127.0.0.1:1/api/v1", leases=True, **counts)
    # flush() and shutdown() take seconds, 0 or more: NaN made every request's deadline fail (flush never returned).
    timeouts: list[Any] = [float("nan"), -1, float("inf"), "5", True]
    for timeout in timeouts:
        with pytest.raises(TypeError, match="flush: timeout"):
            m.flush(timeout=timeout)
        with pytest.raises(TypeError, match="shutdown: timeout"):
            m.shutdown(timeout=timeout)
    assert m.flush(timeout=0)
    # Options read from the environment as strings: "false" would be truthy, so a string is refused.
    for option in ("blocking", "fail_closed", "leases"):
        with pytest.raises(TypeError, match=option):
            Meter(api_key="k", base_url="http://127.0.0.1:1/api/v1", **{option: "false"})  # type: ignore[arg-type]
    m.shutdown(timeout=0.1)


def nest(levels: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    at = top
    for _ in range(levels - 1):
        at["a"] = {}
        at = at["a"]
    return top


def test_what_the_service_would_refuse_is_refused_at_the_call_site_and_the_edge_is_delivered(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 10})
    m = Meter(api_key=product.key, base_url=product.url)
    for bad in (".", "..", "a\ud800b"):
        with pytest.raises(TypeError, match="user_id"):
            m.record(bad, input_tokens=1)
    with pytest.raises(TypeError, match="input_tokens"):
        m.record(user, input_tokens=1_000_000_001)
    with pytest.raises(TypeError, match="output_tokens"):
        m.record(user, output_tokens=1_000_000_001)
    with pytest.raises(TypeError, match="nest deeper than 16"):
        m.record(user, input_tokens=1, metadata=nest(17))
    with pytest.raises(TypeError, match="nest deeper than 16"):
        m.guard(user, metadata=nest(17))
    # The edge of each bound is the service's too: delivered, none refused.
    m.record(user, input_tokens=1_000_000_000, output_tokens=1, metadata=nest(16))
    assert m.flush()
    assert m.stats.rejected == 0 and m.stats.sent == 1
    assert product.usage(user)["total_tokens"] == 1_000_000_001
    m.shutdown()


def test_a_model_or_session_id_the_service_would_refuse_is_refused_at_guard_and_reserve(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 10, **PRICED})
    m = Meter(api_key=product.key, base_url=product.url)
    # More than 255 characters, or not a string: the gate event, or the usage the reservation commits, would carry
    # it and the service refuse it at delivery (422), losing the usage. Refused at the call, as record() does.
    for name, bad in (("model", "m" * 256), ("session_id", "s" * 256), ("model", 4), ("session_id", 4)):
        kw: dict[str, Any] = {name: bad}
        with pytest.raises(TypeError, match=name):
            m.guard(user, **kw)
        with pytest.raises(TypeError, match=name):
            m.reserve(user, **kw)
        with pytest.raises(TypeError, match=name):
            m.reserve_now(user, **kw)

        async def awaited(name: str = name, kw: dict[str, Any] = kw) -> None:
            with pytest.raises(TypeError, match=name):
                await m.aguard(user, **kw)
            with pytest.raises(TypeError, match=name):
                await m.areserve(user, **kw)

        asyncio.run(awaited())
    assert m.stats.queued == 0
    # 255 characters each are the service's too: delivered.
    with m.reserve(user, model="m" * 255, session_id="s" * 255, input_tokens=10) as r:
        r.commit(input_tokens=10)
    assert m.flush()
    assert m.stats.sent == 1 and m.stats.rejected == 0
    assert product.usage(user)["total_tokens"] == 10
    m.shutdown()


def test_what_a_callback_or_the_caller_changes_in_a_usage_event_is_not_sent(
    product: Product, proxy: FaultProxy
) -> None:
    user = product.create_user({"max_spend_per_period": 100, **PRICED})
    m = Meter(api_key=product.key, base_url=proxy.api_url)

    def tamper(ev: UsageEvent) -> None:
        ev.metadata["tampered"] = True
        ev.metadata.setdefault("nested", {})["by"] = "callback"
        ev.cost_total = 999.0
        ev.input_tokens = 1
        ev.tool_calls.append("forged")

    m.on_usage(tamper)
    recorded = m.record(user, model="gpt-4o", input_tokens=1000, metadata={"nested": {"by": "caller"}})
    with m.reserve(user, model="gpt-4o", input_tokens=1000) as r:
        committed = r.commit(input_tokens=1000)
    for ev in (recorded, committed):
        ev.model = "another"
        ev.metadata["later"] = True
    assert m.flush()
    sent = [e for batch in proxy.sent(r"POST /events/batch") for e in batch]
    assert [(e["model"], e["input_tokens"], e["cost_total"], e["tool_calls"]) for e in sent] == [
        ("gpt-4o", 1000, 2.5, []),
        ("gpt-4o", 1000, 2.5, []),
    ]
    assert [e["metadata"] for e in sent] == [{"nested": {"by": "caller"}}, {}]
    # The callers' copies still hear what the library learns: the service's acknowledgment.
    assert recorded.synced and committed.synced
    assert near(product.usage(user)["total_cost"], 5.0)
    m.shutdown()


def test_errors_are_meter_errors() -> None:
    m = Meter(api_key="k", base_url="http://127.0.0.1:1/api/v1", startup_timeout=0.2)
    # `except MeterError` catches everything the library raises: a wrong argument is a TypeError that is also
    # a MeterError, a wrong setting a ValueError that is also one.
    with pytest.raises(MeterError) as argument:
        m.guard("")
    assert isinstance(argument.value, TypeError)
    with pytest.raises(MeterError) as setting:
        Meter(api_key="k", base_url="http://127.0.0.1:1/api/v1", flush_interval=0)
    assert isinstance(setting.value, ValueError)
    m.shutdown(timeout=0.1)


def test_a_plan_change_applies_once_refresh_interval_elapses(product: Product) -> None:
    plan_id = product.create_plan(max_spend_per_period=100, **PRICED)
    user = product.create_user()
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    product.subscribe(user, plan_id, now - timedelta(days=1), now + timedelta(days=10))
    m = meter_for(product, refresh_interval=0.2)
    m.record(user, model="gpt-4o", output_tokens=100)  # $1
    assert m.guard(user).status == "ok"
    assert m.flush()
    assert product.api.patch(f"/config/plans/{plan_id}", {"max_spend_per_period": 1}).status_code == 200

    def blocked() -> bool:
        try:
            m.guard(user)
        except LimitExceededError:
            return True
        return False

    eventually(blocked, what="the lowered cap to gate")
    m.shutdown()


@pytest.mark.parametrize("leases", [False, True])
def test_models_named_like_object_members_are_gated_and_metered_as_the_plan_says(
    product: Product, leases: bool
) -> None:
    # The same names as the TypeScript client's test: they must mean nothing special here either.
    cost = {"constructor": 0.6, "toString": 1.6, "__proto__": 0.06, "hasOwnProperty": 0.06}
    user = product.create_user(
        {
            "max_spend_per_period": 1000,
            "pre_call_estimate": True,
            "pre_call_buffer_tokens": 0,
            "cost_rates": {"constructor": {"input": 1, "output": 2}, "toString": {"input": 3, "output": 4}},
            "default_cost_rate": {"input": 0.1, "output": 0.2},
            "model_limits": {
                "constructor": {"max_tokens_per_period": 1000},
                "hasOwnProperty": {"max_tokens_per_period": 1000},
            },
        }
    )
    m = meter_for(product, leases=leases)
    for model, price in cost.items():
        with m.reserve(user, model=model, input_tokens=400) as r:
            ev = r.commit(input_tokens=400, output_tokens=100)
        assert ev.model == model and near(ev.cost_total, price)
    st = m.state(user)
    assert st is not None
    assert st.period_tokens_by_model == {model: 500 for model in cost}
    for model in ("constructor", "hasOwnProperty"):
        with pytest.raises(LimitExceededError) as err:
            m.reserve(user, model=model, input_tokens=600)
        assert err.value.result.gate_reason == f"model_limit:{model}" and err.value.result.limit_value == 1000
    for model in ("__proto__", "toString"):
        m.reserve(user, model=model, input_tokens=50_000).release()
    assert m.flush()
    assert near(product.usage(user)["total_cost"], sum(cost.values()))
    m.shutdown()


def test_a_blocked_call_says_when_its_limit_lifts(product: Product) -> None:
    from datetime import datetime, timedelta, timezone

    user = product.create_user({"max_spend_per_period": 1, "max_spend_per_session": 0.5, **PRICED})
    m = meter_for(product)
    m.record(user, model="gpt-4o", output_tokens=50)  # $0.50: the library's own session is at its cap
    with pytest.raises(LimitExceededError) as own:
        m.guard(user)
    st = m.state(user)
    assert st is not None and own.value.result.gate_reason == "session_spend"
    # The end of the library's own window: 30 minutes from its start (the plan's default timeout).
    assert own.value.resets_at is not None
    left = own.value.resets_at - datetime.now(timezone.utc)
    assert timedelta(minutes=29) < left <= timedelta(minutes=30)
    m.record(user, model="gpt-4o", output_tokens=50, session_id="c1")  # $1: the period cap
    with pytest.raises(LimitExceededError) as period:
        m.guard(user, session_id="c2")
    assert period.value.result.gate_reason == "total_spend"
    assert period.value.resets_at == datetime.fromisoformat(st.billing_period.end.replace("Z", "+00:00"))
    # The 429 a web framework answers with.
    now = datetime.now(timezone.utc).timestamp()
    assert retry_after_seconds(period.value, now) == math.ceil(period.value.resets_at.timestamp() - now)
    assert limit_body(period.value) == {
        "detail": str(period.value),
        "gate_reason": "total_spend",
        "usage_pct": 1.0,
        "current_value": 1.0,
        "limit_value": 1.0,
        "resets_at": st.billing_period.end,
    }
    try:
        raise RuntimeError("a model client's own error") from period.value
    except RuntimeError as wrapped:
        assert limit_of(wrapped) is period.value
    # A caller-named session lasts as long as it is used: no time is known.
    other = product.create_user({"max_spend_per_period": 100, "max_spend_per_session": 0.5, **PRICED})
    m.record(other, model="gpt-4o", output_tokens=50, session_id="c1")
    with pytest.raises(LimitExceededError) as named:
        m.guard(other, session_id="c1")
    assert named.value.result.gate_reason == "session_spend" and named.value.resets_at is None
    assert retry_after_seconds(named.value) is None
    m.shutdown()


def test_calls_inside_meter_user_take_its_session_for_that_user(product: Product) -> None:
    user = product.create_user({"max_spend_per_session": 1, **PRICED})
    other = product.create_user()
    m = meter_for(product)
    with m.user(user, session_id="conv-1"):
        ev = m.record(user, model="gpt-4o", output_tokens=100)  # $1: conv-1 at its cap
        assert ev.session_id == "conv-1"
        with pytest.raises(LimitExceededError):
            m.guard(user)
        assert m.guard(user, session_id="conv-2").status == "ok"  # a session named by the call wins
        assert m.record(other, input_tokens=1).session_id != "conv-1"  # another user's call: its own
    assert m.guard(user).status == "ok"  # outside: the library's own session
    m.shutdown()


def test_idle_users_are_swept_on_their_own_interval_whatever_the_flush_interval(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 10.0, **PRICED})
    # Deliveries once an hour; the idle sweep runs every min(refresh_interval, 60 s) still.
    m = Meter(api_key=product.key, base_url=product.url, flush_interval=3600, refresh_interval=0.5)
    m.guard(user, model="gpt-4o")
    assert m.stats.users == 1
    # A day later every session of the user is over: the user is forgotten by the next sweep.
    set_clock(lambda: time.time() + 86_400)
    try:
        eventually(lambda: m.stats.users == 0, what="the idle user forgotten")
    finally:
        set_clock(None)
    assert m.shutdown(timeout=30)


def test_help_shows_the_public_methods_as_called() -> None:
    # help() and editors read __name__ and the signature: the public names and what each returns, never the
    # core's flows (``_flush(...) -> Flow[bool]``).
    from meterline import AsyncMeter

    for cls in (Meter, AsyncMeter):
        for name in ("guard", "record", "reserve", "refresh", "record_manual", "portal_token", "flush", "shutdown"):
            method = getattr(cls, name)
            shown = str(inspect.signature(method))
            assert method.__name__ == name and "Flow" not in shown and shown.startswith("(self"), (cls, name, shown)
    assert str(inspect.signature(Meter.flush)).endswith("-> 'bool'")
    # Meter's awaitable forms carry their own names, not the blocking ones'.
    assert [Meter.aguard.__name__, Meter.areserve.__name__, Meter.arecord.__name__] == ["aguard", "areserve", "arecord"]
    # The delivery queue's hooks are the library's own: not offered to the product beside the API.
    for cls in (Meter, AsyncMeter):
        hooks = ("warn", "held", "delivered", "discarded", "stalled", "misaddressed", "key_refused")
        assert [h for h in hooks if hasattr(cls, h)] == [], cls


def test_a_model_the_plan_prices_none_of_is_said_once(product: Product, caplog: pytest.LogCaptureFixture) -> None:
    user = product.create_user(PRICED)
    tokens_only = product.create_user({"model_limits": {"m": {"max_tokens_per_period": 10_000}}})
    m = Meter(api_key=product.key, base_url=product.url)
    with caplog.at_level(logging.WARNING, logger="meterline"):
        assert m.record(user, model="gpt-4o", input_tokens=1000).cost_total > 0
        for _ in range(3):
            assert m.record(user, model="unlisted-model", input_tokens=1000).cost_total == 0
        # Token caps only: nothing priced on purpose, nothing said.
        m.record(tokens_only, model="m", input_tokens=10)
    said = [r.getMessage() for r in caplog.records if "has no rate" in r.getMessage()]
    assert len(said) == 1 and 'model "unlisted-model"' in said[0] and "cost_rates price gpt-4o" in said[0], said
    m.shutdown()
