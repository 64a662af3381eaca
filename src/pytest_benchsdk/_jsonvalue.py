"""JavaScript value semantics for scoring: JSON round trips, JSON-text identity, ``===``.

Dimensions are copied with ``JSON.parse(JSON.stringify(x))``, ``group_by`` values are grouped by
their JSON text, and ``success.require_data`` compares with ``===``; these helpers give the same
answers for Python values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final

from ._jsfmt import is_number
from .records import JSONObject

__all__ = ["OMIT", "group_identity", "js_strict_equal", "json_object", "json_value"]

OMIT: Final = object()


def json_value(value: Any) -> Any:
    """``JSON.parse(JSON.stringify(value))`` for Python values (``OMIT`` for undefined)."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        # NaN/Infinity become null; -0 becomes 0.
        return value + 0.0 if math.isfinite(value) else None
    if isinstance(value, Mapping):
        out: JSONObject = {}
        for key, item in value.items():
            converted = json_value(item)
            if converted is not OMIT:
                out[key if isinstance(key, str) else str(key)] = converted
        return out
    if isinstance(value, (list, tuple)):
        items = [json_value(item) for item in value]
        return [None if item is OMIT else item for item in items]
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire):
        return json_value(to_wire())
    if callable(value):
        return OMIT  # functions vanish like undefined
    raise TypeError(f"dimension value {value!r} is not JSON-serialisable")


def json_object(value: Mapping[str, Any]) -> JSONObject:
    converted = json_value(value)
    if not isinstance(converted, dict):
        raise TypeError(f"dimensions must be a mapping (got {value!r})")
    return converted


def group_identity(value: Any) -> object:
    """A key equal for two values exactly when upstream's ``JSON.stringify`` texts are equal.

    Strings are their own key (a plain ``str``); every other key is a tuple, so the two kinds
    never collide.
    """
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        number = float(value)
        # JSON writes NaN/Infinity as null; all JS numbers are doubles (so 1 == 1.0, -0 == 0).
        return ("n", number) if math.isfinite(number) else ("z", None)
    if value is None:
        return ("z", None)
    try:
        converted = json_value(value)
    except TypeError:
        return ("r", repr(value))  # not JSON data at all; identity by repr is the best we can do
    if converted is OMIT:
        return ("u", None)  # JSON.stringify(function) is undefined
    return ("j", json.dumps(_normalise_numbers(converted), ensure_ascii=False))


def _normalise_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _normalise_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise_numbers(v) for v in value]
    return value


def js_strict_equal(a: object, b: object) -> bool:
    """JavaScript ``a === b`` for JSON primitives (True !== 1, 1 === 1.0, NaN !== NaN)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return a is b
