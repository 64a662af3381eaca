"""JavaScript-compatible formatting of values.

Upstream messages interpolate values with JavaScript's ``String(v)``, ``JSON.stringify(v)`` and
``Number.prototype.toFixed``, and round with ``Math.round``. Matching them exactly keeps our
validation messages and scores byte-for-byte equal to upstream's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = [
    "is_js_integer",
    "is_number",
    "js_json",
    "js_round",
    "js_round2",
    "js_string",
    "js_to_fixed",
    "js_typeof",
]


def is_number(value: object) -> bool:
    """``typeof value === "number"``: ints and floats, never bools."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_js_integer(value: object) -> bool:
    """``Number.isInteger(value)``: 3 and 3.0 are integers, 1.5, NaN and bools are not."""
    if not is_number(value):
        return False
    if isinstance(value, int):
        return True
    assert isinstance(value, float)
    return math.isfinite(value) and value.is_integer()


def _js_number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    # Python writes 1e-07 / 1e+22 where JavaScript writes 1e-7 / 1e+22.
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = exponent[0] if exponent[0] in "+-" else "+"
        digits = exponent.lstrip("+-").lstrip("0") or "0"
        text = f"{mantissa}e{sign}{digits}"
    return text


def js_string(value: object) -> str:
    """JavaScript's ``String(value)``; ``None`` stands for ``undefined``."""
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ",".join("" if item is None else js_string(item) for item in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def js_typeof(value: object) -> str:
    """JavaScript's ``typeof`` for Python values (``None`` is ``undefined``)."""
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if callable(value):
        return "function"
    return "object"


def _json_default(value: Any) -> Any:
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire):
        return to_wire()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json_safe(value: Any) -> Any:
    # JSON.stringify writes NaN and Infinity as null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def js_json(value: object, indent: int | None = None) -> str:
    """``JSON.stringify(value[, null, indent])`` for JSON-like Python values."""
    if value is None:
        return "undefined"
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(
        _json_safe(value),
        indent=indent,
        separators=separators,
        ensure_ascii=False,
        default=_json_default,
    )


def js_to_fixed(value: float, digits: int) -> str:
    """``value.toFixed(digits)``: rounds the exact binary value half away from zero."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    quantum = Decimal(1).scaleb(-digits)
    text = str(Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP))
    if text.startswith("-") and Decimal(text) == 0:
        text = text[1:]
    return text


def js_round(value: float) -> float:
    """``Math.round``: halves round toward +infinity (Python's ``round`` is banker's)."""
    if not math.isfinite(value):
        return value
    # floor(x + 0.5) is off for 0.49999999999999994 (x + 0.5 rounds up to 1.0); this is exact.
    floor = math.floor(value)
    return float(floor + 1 if value - floor >= 0.5 else floor)


def js_round2(value: float) -> float:
    """``Math.round(value * 100) / 100``, upstream's two-decimal rounding of scores."""
    if not math.isfinite(value):
        return value
    return js_round(value * 100) / 100
