"""Exact money, as the TypeScript client and the service keep it: amounts are summed as whole
nano-dollars (1 n$ = 1e-9 $), never as float dollars (0.00125 added 200 times as floats is
0.2500000000000001), and converted to dollars once (the float nearest to the exact amount).
Ratios (usage_pct) are rounded to 1e-6. Same rules, same cases: rules/cases.json."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal

NANOS_PER_DOLLAR = 1_000_000_000
RATIO_SCALE = 1_000_000
_floor = math.floor


def _round_half_up(x: float) -> int:
    """JavaScript's Math.round: the nearest integer, halves toward +infinity (not Python's round())."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


# Digits enough for any double below 1e21 with 9 decimals (the default context's 28 refused 1e19 and more).
_WIDE = Context(prec=40, rounding=ROUND_HALF_UP)


def fixed(x: float, digits: int) -> str:
    """JavaScript's ``x.toFixed(digits)``: the exact value of the double rounded half away from zero (Python's
    ``f"{x:.2f}"`` rounds half to even: $0.125 read "$0.12" here and "$0.13" in the TypeScript library)."""
    return str(_WIDE.quantize(Decimal(x), Decimal(1).scaleb(-digits)))


def js_number(x: float) -> str:
    """A number as JavaScript's ``String(x)`` writes it (the TypeScript library's messages): the shortest digits that
    read back as ``x``, in positional form from 1e-6 up to 1e21 ("0.00002", "1000000", not "2e-05", "1e+06")."""
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign, digits, exp = Decimal(repr(float(x))).normalize().as_tuple()
    assert isinstance(exp, int)
    s = "".join(map(str, digits))
    k = len(s)
    n = exp + k  # the decimal point sits after n digits
    if k <= n <= 21:
        out = s + "0" * (n - k)
    elif 0 < n <= 21:
        out = f"{s[:n]}.{s[n:]}"
    elif -6 < n <= 0:
        out = "0." + "0" * -n + s
    else:
        e = n - 1
        out = f"{s[0]}{'.' + s[1:] if k > 1 else ''}e{'+' if e >= 0 else '-'}{abs(e)}"
    return ("-" if sign else "") + out


def gate_mark(max_dollars: float, at: float) -> float:
    """A gate's mark on a cap in dollars: the cap's nano-dollars times the gate, rounded as the TypeScript library
    (``max * at`` in floats gave $2.0999999999999996 for 0.7 of $3)."""
    return to_dollars(_round_half_up(to_nano(max_dollars) * at))


# Below 2^51 nano-dollars (about $2.25M) dollars x 1e9 lies within half a unit of the whole nano-dollars the amount
# stands for; above it the product's own error reaches half a unit ($4,337,334.005927324 gave one more).
_EXACT_PRODUCT = 2.0**51


def to_nano(dollars: float) -> int:
    """Dollars to whole nano-dollars, the nearest (halves away from zero)."""
    # _round_half_up inlined: every guard converts a few amounts, often nothing reserved.
    if dollars == 0:
        return 0
    n = dollars * NANOS_PER_DOLLAR
    if not -_EXACT_PRODUCT < n < _EXACT_PRODUCT:
        # Larger amounts from the decimal digits of the exact value (the TypeScript library's toFixed(9)).
        return int(fixed(dollars, 9).replace(".", "")) if abs(dollars) < 1e21 else round(n)
    if n < 0:
        f = _floor(-n)
        return -(f + 1 if -n - f >= 0.5 else f)
    f = _floor(n)
    return f + 1 if n - f >= 0.5 else f


def to_dollars(nano: int) -> float:
    """Whole nano-dollars to dollars: the float nearest to the exact amount."""
    return nano / NANOS_PER_DOLLAR


def add_dollars(a: float, b: float) -> float:
    """a + b of two dollar amounts, added as whole nano-dollars."""
    return to_dollars(to_nano(a) + to_nano(b))


def ratio(part: float, whole: float) -> float:
    """part / whole rounded to 1e-6 (usage_pct)."""
    return _round_half_up(part / whole * RATIO_SCALE) / RATIO_SCALE


def token_cost_nano(input_tokens: int, output_tokens: int, rate_in_nano: int, rate_out_nano: int) -> int:
    """round((input x rate_in + output x rate_out) / 1000), rates in nano-dollars per 1K tokens:
    one rounding, half up, on exact integers (as the TypeScript rules do)."""
    if not all(isinstance(v, int) or float(v).is_integer() for v in (input_tokens, output_tokens)):
        return _round_half_up((input_tokens * rate_in_nano + output_tokens * rate_out_nano) / 1000)
    total = int(input_tokens) * rate_in_nano + int(output_tokens) * rate_out_nano
    if total < 0:
        return -((-total + 500) // 1000)
    return (total + 500) // 1000
