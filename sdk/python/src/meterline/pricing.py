"""Cost rules of the API contract (pure). The service prices manual events by the same rules;
rules/cases.json holds the cases both client libraries are tested against."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .money import to_dollars, to_nano, token_cost_nano
from .types import PlanConfig, Rate


def normalize_model(model: str, plan: PlanConfig | None) -> str:
    """Longest-prefix match over the keys of cost_rates and model_limits; no match: the name as is."""
    if plan is None:
        return model
    best = ""
    for key in plan.cost_rates:
        if len(key) > len(best) and model.startswith(key):
            best = key
    for key in plan.model_limits:
        if len(key) > len(best) and model.startswith(key):
            best = key
    return best or model


def rate_of(model: str | None, plan: PlanConfig | None) -> Rate | None:
    """Rates per 1K tokens of a normalized model: cost_rates, else default_cost_rate, else none."""
    if plan is None or model is None:
        return None
    return plan.cost_rates.get(model) or plan.default_cost_rate


def _token_cost_nano(input_tokens: int, output_tokens: int, rate: Rate | None) -> int:
    if rate is None:
        return 0
    return token_cost_nano(input_tokens, output_tokens, to_nano(rate.input), to_nano(rate.output))


def token_cost(input_tokens: int, output_tokens: int, rate: Rate | None) -> float:
    """Dollars of a call's tokens, exact at the nano-dollar (money.py): one rounding per call."""
    return to_dollars(_token_cost_nano(input_tokens, output_tokens, rate))


def _tools_cost_nano(tools: Iterable[str], plan: PlanConfig | None) -> int:
    if plan is None:
        return 0
    total = 0
    for tool in tools:
        c = plan.tool_costs.get(tool)
        total += to_nano(plan.default_tool_cost if c is None else c)
    return total


def tools_cost(tools: Iterable[str], plan: PlanConfig | None) -> float:
    """Dollars of a call's tool calls, summed as whole nano-dollars."""
    return to_dollars(_tools_cost_nano(tools, plan))


@dataclass(frozen=True, slots=True)
class Priced:
    model: str | None
    cost_tokens: float
    cost_tools: float
    cost_total: float


def price(
    model: str | None, input_tokens: int, output_tokens: int, tools: Iterable[str], plan: PlanConfig | None
) -> Priced:
    """Prices one call, each amount exact at the nano-dollar; without a plan everything costs 0."""
    m = normalize_model(model, plan) if model else None
    ct = _token_cost_nano(input_tokens, output_tokens, rate_of(m, plan))
    tc = _tools_cost_nano(tools, plan)
    return Priced(m, to_dollars(ct), to_dollars(tc), to_dollars(ct + tc))


def estimate_tokens(prompt: Any) -> int:
    """Input tokens of a prompt when the caller gives none: about four characters a token."""
    if prompt is None:
        return 0
    # As rules/pricing.ts counts: JSON.stringify's text (non-ASCII kept as is) in UTF-16 code units.
    text = (
        prompt
        if isinstance(prompt, str)
        else json.dumps(prompt, default=str, separators=(",", ":"), ensure_ascii=False)
    )
    return math.ceil(_utf16_length(text) / 4)


def _utf16_length(text: str) -> int:
    """What JavaScript's ``length`` says of ``text``: a character outside the Basic Multilingual Plane counts 2."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)
