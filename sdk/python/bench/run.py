"""The Python client's figures (run by `npm run bench:sdk-python`, which starts the stack): guard on
a loaded user, record, memory per cached user, and what each model-client wrapper adds per call."""

from __future__ import annotations

import gc
import os
import statistics
import time
import tracemalloc
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
from anthropic import Anthropic
from langchain_core.callbacks import BaseCallbackHandler
from langchain_openai import ChatOpenAI
from openai import OpenAI
from pydantic import SecretStr

from meterline import Meter
from meterline import anthropic as meter_anthropic
from meterline import openai as meter_openai
from meterline.langchain import MeterCallbackHandler
from meterline.types import PlanConfig
from tests.mock_providers import MockProvider

GUARDS = int(os.environ.get("BENCH_GUARDS", 100_000))
RECORDS = int(os.environ.get("BENCH_RECORDS", 50_000))
USERS = int(os.environ.get("BENCH_USERS", 300))
PAIRS = int(os.environ.get("BENCH_PAIRS", 1_000))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 3))
# Which parts run (BENCH_PARTS): guard (with and without 4 windows, a team's member), core (the guards, record,
# reserve + commit), memory, own (wrappers without the network), wrappers.
WARMUP = 300

URL = os.environ["METER_BENCH_API_URL"]
KEY = os.environ["METER_API_KEY"]
api = httpx.Client(base_url=URL, headers={"authorization": f"Bearer {KEY}"}, timeout=30)
PLAN = {
    "max_spend_per_period": 1e9,
    "max_spend_per_session": 1e9,
    "pre_call_estimate": True,
    "model_limits": {"gpt-4o": {"max_tokens_per_period": 10**12}},
    "cost_rates": {
        "gpt-4o": {"input": 2.5, "output": 10},
        "gpt-4o-mini": {"input": 0.15, "output": 0.6},
        "claude": {"input": 3, "output": 15},
    },
}


# The same with 4 windows (a day, a month, requests a minute, a rolling 5 hours), as bench/sdk.ts.
WINDOWS_PLAN = {
    **PLAN,
    "time_zone": "America/New_York",
    "limits": [
        {"name": "daily", "metric": "spend", "max": 1e6, "window": "day"},
        {"name": "monthly", "metric": "spend", "max": 1e7, "window": "month"},
        {"name": "per_minute", "metric": "requests", "max": 1e9, "window": "minute"},
        {"name": "five_hours", "metric": "tokens", "max": 1e12, "window": "rolling", "duration_minutes": 300},
    ],
}


# A team plan, as bench/sdk.ts: the team's cap and model cap, a team window and a member window.
TEAM_PLAN = {
    "max_spend_per_period": 1e9,
    "cost_rates": PLAN["cost_rates"],
    "model_limits": {"gpt-4o": {"max_tokens_per_period": 10**12}},
    "limits": [
        {"name": "team_daily", "metric": "spend", "max": 1e6, "window": "day", "scope": "team"},
        {"name": "seat", "metric": "spend", "max": 1e6, "window": "month", "scope": "member"},
    ],
}


def plan(body: dict[str, Any] = PLAN) -> str:
    res = api.post("/config/plans", json={"plans": [{"name": f"p-{uuid.uuid4()}", **body}]})
    res.raise_for_status()
    plan_id: str = res.json()["plans"][0]["id"]
    return plan_id


def subscription(plan_id: str) -> dict[str, str]:
    now = datetime.now(timezone.utc)
    start, end = now - timedelta(days=1), now + timedelta(days=20)
    return {"plan_id": plan_id, "period_start": start.isoformat(), "period_end": end.isoformat()}


def user(plan_id: str, team: str | None = None) -> str:
    uid = f"u-{uuid.uuid4()}"
    api.post("/users", json={"external_user_id": uid}).raise_for_status()
    api.post(f"/users/{uid}/subscription", json=subscription(plan_id)).raise_for_status()
    if team is not None:
        api.put(f"/users/{uid}/team", json={"team_id": team}).raise_for_status()
    return uid


def team(plan_id: str) -> str:
    tid = f"t-{uuid.uuid4()}"
    api.post("/teams", json={"external_team_id": tid, "name": "bench team"}).raise_for_status()
    api.post(f"/teams/{tid}/subscription", json=subscription(plan_id)).raise_for_status()
    return tid


def timed(fn: Callable[[], Any], n: int) -> list[int]:
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t = clock()
        fn()
        out.append(clock() - t)
    return out


def us(ns: float) -> str:
    return f"{ns / 1000:.2f} µs"


def guard_bench(label: str, plan_id: str, team_id: str | None = None) -> None:
    m = Meter(api_key=KEY, base_url=URL, flush_interval=3600, max_queue_size=10**7)
    uid = user(plan_id, team_id)
    m.guard(uid)
    e = m._users[uid]
    windows = len(getattr(e.config or PlanConfig(), "limits", ()))
    teamed = "" if team_id is None else f"; team {'loaded' if e.team is not None else 'absent from the session view'}"
    guard = lambda: m.guard(uid, model="gpt-4o-2024-08-06")  # noqa: E731
    timed(guard, 10_000)
    samples = timed(guard, GUARDS)
    loops = []
    for _ in range(5):
        t = time.perf_counter_ns()
        for _ in range(10_000):
            m.guard(uid, model="gpt-4o-2024-08-06")
        loops.append((time.perf_counter_ns() - t) / 10_000)
    loop = min(loops)
    print(
        f"{label}: median {us(statistics.median(samples))} a call (each timed, {GUARDS} calls); p99 "
        f"{us(statistics.quantiles(samples, n=100)[98])}; {us(loop)} a call in the best of 5 loops of 10,000; "
        f"{windows} windows on the plan{teamed}"
    )
    m.shutdown(timeout=60)


def guards(plan_id: str) -> None:
    """The guard without windows, with 4, and of a team's member (target: median <= 5 µs each)."""
    guard_bench("guard() on a loaded user (every dimension, model normalization, no network)", plan_id)
    guard_bench("guard() with 4 windows on the plan", plan(WINDOWS_PLAN))
    teamed = team(plan(TEAM_PLAN))
    guard_bench("guard() of a team's member (team cap, model cap, a team and a member window)", plan_id, teamed)


def core(plan_id: str) -> None:
    guards(plan_id)
    m = Meter(api_key=KEY, base_url=URL, flush_interval=3600, max_queue_size=10**7)
    uid = user(plan_id)
    m.guard(uid)
    record = lambda: m.record(uid, model="gpt-4o", input_tokens=100, output_tokens=50)  # noqa: E731
    samples = timed(record, RECORDS)
    print(
        f"record() (price, count, build the event, queue it): median {us(statistics.median(samples))}, "
        f"p99 {us(statistics.quantiles(samples, n=100)[98])}"
    )
    prompt = {"messages": [{"role": "user", "content": "Hi"}], "tools": None}

    def reserve_commit() -> None:
        r = m.reserve_now(uid, model="gpt-4o", prompt=prompt)
        assert r is not None
        r.commit(input_tokens=12, output_tokens=30)

    samples = timed(reserve_commit, RECORDS)
    print(
        f"reserve_now() + commit() with pre_call_estimate (the core's share of a wrapped call): median "
        f"{us(statistics.median(samples))}, p99 {us(statistics.quantiles(samples, n=100)[98])}"
    )
    m.shutdown(timeout=60)


def traced() -> int:
    """The memory tracemalloc counts now, after a collection."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def memory(plan_id: str) -> None:
    ids = [user(plan_id) for _ in range(USERS)]
    m = Meter(api_key=KEY, base_url=URL, flush_interval=3600)
    m.guard(ids[0])
    gc.collect()
    tracemalloc.start()
    base = traced()
    for uid in ids:
        m.guard(uid, model="gpt-4o")
    loaded = traced()
    for uid in ids:
        m.record(uid, model="gpt-4o", input_tokens=10, output_tokens=10)
    queued = traced()
    m.flush(timeout=60)
    after = traced()
    tracemalloc.stop()
    n = len(ids)
    print(
        f"memory per cached user ({n} users, tracemalloc): {(loaded - base) / n / 1024:.1f} KiB with its view "
        f"loaded; {(queued - base) / n / 1024:.1f} KiB while one event is queued; "
        f"{(after - base) / n / 1024:.1f} KiB after delivery"
    )
    m.shutdown(timeout=60)
    leased_memory(ids)
    # The same users again, members of teams of 10: each call reserved from the member's lease and its team's.
    team_plan = plan(TEAM_PLAN)
    for i in range(0, len(ids), 10):
        tid = team(team_plan)
        for uid in ids[i : i + 10]:
            api.put(f"/users/{uid}/team", json={"team_id": tid}).raise_for_status()
    leased_memory(ids, members=True)


def leased_memory(ids: list[str], members: bool = False) -> None:
    """The same users, each call reserved from a budget lease (``leases=True``): what a user's lease book adds, and
    what is left once the idle users' books are gone (their views stay cached). ``members``: the users are members
    of teams, served 4 calls at a time as a web server's threads would."""
    # Longer than the calls take on a slow machine: the books are counted before any goes idle.
    idle = 30.0
    m = Meter(api_key=KEY, base_url=URL, flush_interval=3600, leases=True, lease_idle=idle)
    m.guard(ids[0])
    gc.collect()
    tracemalloc.start()
    base = traced()

    def call(uid: str) -> None:
        with m.reserve(uid, model="gpt-4o", input_tokens=10) as r:
            r.commit(input_tokens=10, output_tokens=10)

    if members:
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(call, ids))
    else:
        for uid in ids:
            call(uid)
    m.flush(timeout=60)
    leased = traced()
    books, teams = m.stats.leased_users, m.stats.leased_teams
    deadline = time.monotonic() + 4 * idle
    while ((m.stats.leased_users or 0) > 0 or (m.stats.leased_teams or 0) > 0) and time.monotonic() < deadline:
        time.sleep(0.2)
    forgotten = traced()
    tracemalloc.stop()
    n = len(ids)
    what, held = ("member", "its lease book and its team's") if members else ("user", "its lease book")
    print(
        f"memory per leased {what} ({n} users, tracemalloc): {(leased - base) / n / 1024:.1f} KiB with {held} "
        f"({books} books, {teams} team books); "
        f"{(forgotten - base) / n / 1024:.1f} KiB once idle books were forgotten "
        f"({m.stats.leased_users} and {m.stats.leased_teams} left)"
    )
    m.shutdown(timeout=60)


class NoOp(BaseCallbackHandler):
    raise_error = True


def wrappers(plan_id: str) -> None:
    provider = MockProvider()
    base_anthropic = provider.base[: -len("/v1")]
    m = Meter(api_key=KEY, base_url=URL, flush_interval=3600, max_queue_size=10**7)
    uid = user(plan_id)
    m.guard(uid)
    msgs: Any = [{"role": "user", "content": "Hi"}]
    o_plain = OpenAI(api_key="sk", base_url=provider.base, max_retries=0)
    o_wrapped = meter_openai.wrap(OpenAI(api_key="sk", base_url=provider.base, max_retries=0), m, user_id=uid)
    a_plain = Anthropic(api_key="sk", base_url=base_anthropic, max_retries=0)
    a_wrapped = meter_anthropic.wrap(Anthropic(api_key="sk", base_url=base_anthropic, max_retries=0), m, user_id=uid)
    lc = ChatOpenAI(model="gpt-4o", api_key=SecretStr("sk"), base_url=provider.base, max_retries=0, stream_usage=True)
    handler = MeterCallbackHandler(m, user_id=uid)
    noop = NoOp()

    def chat(c: Any) -> Callable[[], Any]:
        return lambda: c.chat.completions.create(model="gpt-4o", messages=msgs)

    def chat_stream(c: Any) -> Callable[[], Any]:
        return lambda: list(c.chat.completions.create(model="gpt-4o", messages=msgs, stream=True))

    def chat_stream_usage(c: Any) -> Callable[[], Any]:
        return lambda: list(
            c.chat.completions.create(
                model="gpt-4o", messages=msgs, stream=True, stream_options={"include_usage": True}
            )
        )

    def resp_stream(c: Any) -> Callable[[], Any]:
        return lambda: list(c.responses.create(model="gpt-4o", input="Hi", stream=True))

    def msg(c: Any) -> Callable[[], Any]:
        return lambda: c.messages.create(model="claude", max_tokens=50, messages=msgs)

    def msg_stream(c: Any) -> Callable[[], Any]:
        return lambda: list(c.messages.create(model="claude", max_tokens=50, messages=msgs, stream=True))

    def lc_invoke(h: Any) -> Callable[[], Any]:
        return lambda: lc.invoke("Hi", config={"callbacks": [h]})

    def lc_stream(h: Any) -> Callable[[], Any]:
        return lambda: list(lc.stream("Hi", config={"callbacks": [h]}))

    scenarios: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("openai chat.completions", chat(o_plain), chat(o_wrapped)),
        ("openai chat.completions stream (the wrapper asks for usage)", chat_stream(o_plain), chat_stream(o_wrapped)),
        (
            "the same, against an unwrapped call asking for usage (same wire)",
            chat_stream_usage(o_plain),
            chat_stream(o_wrapped),
        ),
        (
            "openai chat.completions stream, the caller asking for usage",
            chat_stream_usage(o_plain),
            chat_stream_usage(o_wrapped),
        ),
        ("openai responses stream", resp_stream(o_plain), resp_stream(o_wrapped)),
        ("anthropic messages", msg(a_plain), msg(a_wrapped)),
        ("anthropic messages stream", msg_stream(a_plain), msg_stream(a_wrapped)),
        ("langchain invoke, against a no-op handler", lc_invoke(noop), lc_invoke(handler)),
        ("langchain stream, against a no-op handler", lc_stream(noop), lc_stream(handler)),
    ]
    added: dict[str, list[float]] = {name: [] for name, _, _ in scenarios}
    p50s: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in scenarios}
    for _name, plain, wrapped in scenarios:
        for _ in range(WARMUP // 10):
            plain()
            wrapped()
    for r in range(ROUNDS):
        for name, plain, wrapped in scenarios:
            u: list[int] = []
            w: list[int] = []
            clock = time.perf_counter_ns
            for i in range(PAIRS):
                # Which goes first alternates, so a change in the machine's load falls on both.
                for fn, out in ((plain, u), (wrapped, w)) if (i + r) % 2 == 0 else ((wrapped, w), (plain, u)):
                    t = clock()
                    fn()
                    out.append(clock() - t)
            pu, pw = statistics.median(u), statistics.median(w)
            p50s[name].append((pu, pw))
            added[name].append(pw - pu)
        m.flush(timeout=60)
    print(
        f"\nwrappers, {ROUNDS} rounds of {PAIRS} alternating pairs (µs per call; the local provider runs in this "
        "process; p50 added is the median of the rounds' differences, range over rounds):"
    )
    print("| scenario | p50 unwrapped | p50 wrapped | p50 added | range |")
    print("|---|---|---|---|---|")
    for name, _, _ in scenarios:
        pu = statistics.median(x[0] for x in p50s[name]) / 1000
        pw = statistics.median(x[1] for x in p50s[name]) / 1000
        a = [x / 1000 for x in added[name]]
        print(f"| {name} | {pu:.0f} | {pw:.0f} | {statistics.median(a):.0f} | {min(a):.0f} to {max(a):.0f} |")
    m.shutdown(timeout=60)
    provider.close()


def own_cost(plan_id: str) -> None:
    """The wrappers' own work, without the network: each client's request() answers a prepared reply."""
    from anthropic.types import Message
    from openai.types.chat import ChatCompletion

    from tests.mock_providers import chat_json, messages_json

    m = Meter(api_key=KEY, base_url=URL, flush_interval=3600, max_queue_size=10**7)
    uid = user(plan_id)
    m.guard(uid)
    msgs: Any = [{"role": "user", "content": "Hi"}]
    chat_reply = ChatCompletion.construct(**chat_json({"model": "gpt-4o"}))
    msg_reply = Message.construct(**messages_json({"model": "claude"}))

    def openai_client(wrapped: bool) -> Any:
        c = OpenAI(api_key="sk", base_url="http://127.0.0.1:9/v1")
        c.request = lambda *a, **k: chat_reply  # type: ignore[method-assign,assignment]
        return meter_openai.wrap(c, m, user_id=uid) if wrapped else c

    def anthropic_client(wrapped: bool) -> Any:
        c = Anthropic(api_key="sk", base_url="http://127.0.0.1:9")
        c.request = lambda *a, **k: msg_reply  # type: ignore[method-assign,assignment]
        return meter_anthropic.wrap(c, m, user_id=uid) if wrapped else c

    def chat(c: Any) -> Callable[[], Any]:
        return lambda: c.chat.completions.create(model="gpt-4o", messages=msgs)

    def messages(c: Any) -> Callable[[], Any]:
        return lambda: c.messages.create(model="claude", max_tokens=50, messages=msgs)

    for name, plain, wrapped in (
        ("openai chat.completions", chat(openai_client(False)), chat(openai_client(True))),
        ("anthropic messages", messages(anthropic_client(False)), messages(anthropic_client(True))),
    ):
        timed(plain, 1_000)
        timed(wrapped, 1_000)
        u: list[int] = []
        w: list[int] = []
        for _ in range(10):
            u += timed(plain, 1_000)
            w += timed(wrapped, 1_000)
        pu, pw = statistics.median(u), statistics.median(w)
        print(
            f"{name} without the network (the client's request() answers a prepared reply): p50 {us(pu)} "
            f"unwrapped, {us(pw)} wrapped: the wrapper adds {us(pw - pu)}"
        )
    m.shutdown(timeout=60)


def main() -> None:
    plan_id = plan()
    # guard: only the guards, without windows and with 4 (core runs them too).
    parts = os.environ.get("BENCH_PARTS", "core,memory,own,wrappers").split(",")
    for name, part in (
        ("guard", guards),
        ("core", core),
        ("memory", memory),
        ("own", own_cost),
        ("wrappers", wrappers),
    ):
        if name in parts:
            part(plan_id)


if __name__ == "__main__":
    main()
