"""Reading raw benchmark config input the way upstream's JavaScript does.

Config input may be a mapping (snake_case keys; declarative ``scoring``/``display`` parts also
camelCase), an attrs model, or any object, and any value may have any type. These helpers read
fields without ever raising and answer JavaScript's questions (``typeof``, ``Array.isArray``,
``Number.isInteger``, ``trim() === ""``) for Python values: ``None`` is ``undefined``, bools are
not numbers, ``3.0`` is an integer. Values in messages are shown as Python writes them
(:func:`show`); a field that is absent reads as :data:`MISSING` where the message tells
"is missing" from "got None".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeGuard, cast

import attrs

from pytest_benchsdk._base.js import (
    is_js_integer,
    js_typeof,
    py_value,
)
from pytest_benchsdk._base.numbers import is_finite

__all__ = [
    "DISPLAY_KEYS",
    "DISPLAY_METRIC_KEYS",
    "DISPLAY_OVERVIEW_KEYS",
    "DISPLAY_STEP_KEYS",
    "MISSING",
    "PHASE_KEYS",
    "SCORING_KEYS",
    "SCORING_METRIC_KEYS",
    "SCORING_SUCCESS_KEYS",
    "SHAPE_KEYS",
    "WEIGHTS_KEYS",
    "ConfigFailure",
    "as_mapping",
    "canonical_fields",
    "get_field",
    "is_array",
    "is_int_at_least",
    "is_js_object",
    "is_number_at_least_zero",
    "show",
]


# --- allowed keys of dict input: every spelling -> canonical snake_case name -------------------


def _keys(*names: str) -> dict[str, str]:
    """Allowed spellings -> canonical snake_case name (camelCase aliases map to snake_case)."""
    table: dict[str, str] = {}
    for name in names:
        snake = re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), name)
        table[name] = snake
        table[snake] = snake
    return table


DISPLAY_KEYS = _keys("metrics", "steps", "overview")
DISPLAY_METRIC_KEYS = _keys("key", "label", "unit", "direction", "decimals", "order")
DISPLAY_STEP_KEYS = _keys("key", "label", "order")
DISPLAY_OVERVIEW_KEYS = _keys("defaultMetric", "defaultLayout")
SCORING_KEYS = _keys("groupBy", "success", "metrics")
SCORING_SUCCESS_KEYS = _keys("requireData")
SCORING_METRIC_KEYS = _keys(
    "key", "label", "unit", "ceiling", "floor", "higherIsBetter", "weights", "trim"
)
WEIGHTS_KEYS = _keys("median", "p95", "p99")
PHASE_KEYS = _keys("name", "iterations", "warmup")
SHAPE_KEYS = _keys("slug", "name", "staggerDelayMs")

# --- JavaScript-like predicates -------------------------------------------------------------


class _Missing:
    """A field that is absent (not given at all), as opposed to given as ``None``."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def show(value: object) -> str:
    """A value in a message as Python writes it (``None``, ``True``, ``'x'``, ``1.5``,
    ``nan``); never raises (cyclic lists, hostile ``__repr__``)."""
    return py_value(value)


def is_array(value: object) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    """``Array.isArray(v)``: a list or a tuple."""
    return isinstance(value, (list, tuple))


def is_int_at_least(value: object, low: int) -> bool:
    """``Number.isInteger(v) && v >= low``."""
    return is_js_integer(value) and is_finite(value) and value >= low  # type: ignore[operator]


def is_number_at_least_zero(value: object) -> bool:
    """``Number.isFinite(v) && v >= 0``."""
    return is_finite(value) and value >= 0  # type: ignore[operator]


def is_js_object(value: object) -> bool:
    """Not null, not a primitive, not an array: what upstream calls an object."""
    if value is None or isinstance(value, (str, bytes, bool, int, float, list, tuple)):
        return False
    return js_typeof(value) == "object"


def as_mapping(value: object) -> Mapping[Any, Any] | None:
    """A mapping or an attrs model as a mapping of its given (non-None) fields; else None."""
    if isinstance(value, Mapping):
        return value
    if attrs.has(type(value)):
        model = cast("attrs.AttrsInstance", value)
        return {
            f.name: getattr(model, f.name)
            for f in attrs.fields(type(model))
            if getattr(model, f.name) is not None
        }
    return None


def get_field(obj: object, snake: str, camel: str | None = None, default: Any = None) -> Any:
    """``obj.<field>`` for a mapping or any object; never raises.

    The first spelling whose value is not None wins; ``None`` when a spelling is present with
    the value None, ``default`` when the field is absent.
    """
    found: Any = default
    for name in (snake, camel):
        if name is None:
            continue
        try:
            if isinstance(obj, Mapping):
                value = obj.get(name, MISSING)
            else:
                value = getattr(obj, name, MISSING)
        except Exception:
            value = MISSING
        if value is MISSING:
            continue
        if value is not None:
            return value
        found = None
    return found


class ConfigFailure(Exception):
    """A failed check; upstream's display/scoring validators throw on the first one."""


def canonical_fields(
    value: object, allowed: Mapping[str, str], path: str | None = None
) -> dict[str, Any]:
    """Fields of a mapping/model under their snake_case names.

    With ``path``, unknown keys fail like upstream's ``assertOnlyAllowedKeys`` (naming the key as
    written); without it they are ignored (used when building models from validated input).
    """
    mapping = as_mapping(value)
    if mapping is None:
        return {}
    out: dict[str, Any] = {}
    written: dict[str, str] = {}
    for key in mapping:
        canon = allowed.get(key) if isinstance(key, str) else None
        if canon is None:
            if path is not None:
                raise ConfigFailure(f"{path} contains unexpected key: {show(key)}")
            continue
        if canon in out:
            if path is not None:
                raise ConfigFailure(f"{path} contains both '{written[canon]}' and '{key}'")
            continue
        out[canon] = mapping[key]
        written[canon] = key
    return out
