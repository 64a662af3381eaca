"""JavaScript value semantics, in one place.

Upstream messages interpolate values with JavaScript's ``String(v)``, ``JSON.stringify(v)`` and
``Number.prototype.toFixed``, round with ``Math.round``, trim with ``String.prototype.trim``,
copy dimensions with ``JSON.parse(JSON.stringify(x))``, group ``group_by`` values by their JSON
text and compare ``success.require_data`` with ``===``. Matching them exactly keeps validation
messages, scores and the wire text byte-for-byte equal to upstream's.

A leaf module: it imports nothing of the package, so every layer (records, engine, store,
platform) may use it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import enum
import json
import math
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import Any, Final

__all__ = [
    "JS_WHITESPACE",
    "MAX_JSON_DEPTH",
    "OMIT",
    "JSONConversionError",
    "JSONObject",
    "group_identity",
    "is_js_integer",
    "is_nonblank_str",
    "is_number",
    "js_json",
    "js_round",
    "js_round2",
    "js_strict_equal",
    "js_string",
    "js_to_number",
    "js_trim",
    "js_typeof",
    "json_object",
    "json_value",
    "py_fixed",
    "py_number",
    "py_value",
    "to_json_value",
]

JSONObject = dict[str, Any]
"""A JSON object (``Record<string, unknown>`` upstream): string keys, JSON-compatible values."""

# Exactly the characters JavaScript's String.prototype.trim() removes (WhiteSpace and
# LineTerminator). Python's str.strip() differs: it also strips \x1c-\x1f and \x85 and keeps
# \ufeff.
JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(value: str | None) -> str:
    """``String.prototype.trim()``; ``None`` (undefined) gives ``""``."""
    return "" if value is None else value.strip(JS_WHITESPACE)


def is_nonblank_str(value: object) -> bool:
    """``typeof v === "string" && v.trim() !== ""``."""
    return isinstance(value, str) and js_trim(value) != ""


# --- String(), typeof, JSON.stringify, toFixed, Math.round ---------------------------------


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


def js_to_number(text: str) -> float:
    """JavaScript's ``Number(text)``: whitespace trimmed, ``""`` is 0, hex/binary/octal
    literals, ``Infinity``, exponents; anything else is NaN."""
    stripped = js_trim(text)
    if stripped == "":
        return 0.0
    lowered = stripped.lower()
    if re.fullmatch(r"0x[0-9a-f]+", lowered):
        return float(int(lowered, 16))
    if re.fullmatch(r"0b[01]+", lowered):
        return float(int(lowered, 2))
    if re.fullmatch(r"0o[0-7]+", lowered):
        return float(int(lowered, 8))
    if re.fullmatch(r"[+-]?Infinity", stripped):
        return -math.inf if stripped.startswith("-") else math.inf
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", lowered):
        return float(lowered)
    return math.nan


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


def _text_key(key: object) -> str:
    """A key as JSON text has it: ``json.dumps``'s (and JavaScript's) ``true``, ``false`` and
    ``null`` for ``True``, ``False`` and ``None``, else ``str(key)``."""
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    return str(key)


def _json_safe(value: Any) -> Any:
    # JSON.stringify writes NaN and Infinity as null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {_text_key(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def js_json(value: object, indent: int | None = None) -> str:
    """``JSON.stringify(value[, null, indent])`` for JSON-like Python values."""
    if value is None:
        return "undefined"
    separators = (",", ":") if indent is None else (",", ": ")
    try:
        # Plain JSON with finite numbers (nearly always): written as it is, without a copy
        # made first (a run summary of 10,000 participants is 20 MB of JSON). A non-finite
        # number, or a mapping that is not a dict, takes the copying way below.
        return json.dumps(
            value,
            indent=indent,
            separators=separators,
            ensure_ascii=False,
            default=_json_default,
            allow_nan=False,
        )
    except (ValueError, TypeError):
        pass
    return json.dumps(
        _json_safe(value),
        indent=indent,
        separators=separators,
        ensure_ascii=False,
        default=_json_default,
    )


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


# --- values in our own messages: Python's words -------------------------------------------
#
# Upstream interpolates values with String() (``undefined``, ``true``, ``NaN``, ``Infinity``)
# and toFixed (``1e21.toFixed(3)`` is 22 digits). Our messages keep upstream's structure but
# show values as Python writes them: ``None``, ``True``, ``'text'``, ``nan``, ``inf``, ``1e-06``.

_MAX_SHOWN: Final = 60


def py_number(value: float) -> str:
    """A number as Python's short form: ``3``, ``1.5``, ``1e-06``, ``1e+21``, ``nan``, ``inf``.

    An integral float below 1e16 is written as an integer (``30000`` for ``30000.0``); numeric
    subclasses (``numpy.float64``, ``IntEnum``) are written as plain numbers.
    """
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        try:
            return int.__repr__(value)
        except ValueError:  # more digits than int -> str allows
            return f"an integer of {value.bit_length()} bits"
    number = float(value)
    if math.isfinite(number) and number.is_integer() and abs(number) < 1e16:
        return str(int(number))
    return float.__repr__(number)


def py_fixed(value: float, digits: int = 3) -> str:
    """A computed number rounded for reading: ``0.800`` (``digits`` decimals) in the usual
    range, Python's short form with ``digits`` significant digits outside it (``1e+21``,
    ``1e-06``), never a 22-digit ``toFixed`` text."""
    number = float(value)
    if not math.isfinite(number):
        return float.__repr__(number)
    if number == 0 or 10.0**-digits <= abs(number) < 1e6:
        return f"{number:.{digits}f}"
    return f"{number:.{digits}g}"


def py_value(value: object) -> str:
    """A value in a message, as Python shows it: numbers by :func:`py_number`, ``None``,
    ``True``, strings and containers by ``repr`` (shortened past 60 characters); never raises
    (hostile ``__repr__``, cycles)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return py_number(value)
        except (OverflowError, ValueError, TypeError):
            pass
    try:
        text = repr(value)
    except Exception:
        text = object.__repr__(value)
    if len(text) > _MAX_SHOWN:
        text = text[: _MAX_SHOWN - 3] + "..."
    return text


# --- JSON round trips and identity ----------------------------------------------------------

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


# --- task data handed over: one conversion rule ----------------------------------------------

#: How deep record data and log meta may nest (containers inside containers).
MAX_JSON_DEPTH: Final = 100


class JSONConversionError(TypeError):
    """A value handed over by a task (``measure``, returned data, ``TaskError(data=...)``, log
    meta) that has no JSON form; the message names its key path and its type."""


_IDENTIFIER_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _child_path(path: str, key: str) -> str:
    if _IDENTIFIER_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _json_key(key: object, path: str) -> str:
    # Object keys are strings in JavaScript: String(key) for primitives, like {[1]: x}.
    if isinstance(key, str):
        return str(key)
    if key is None:
        return "null"
    if isinstance(key, (bool, int, float)):
        return js_string(key)
    if isinstance(key, tuple) and all(
        k is None or isinstance(k, (str, bool, int, float)) for k in key
    ):
        return js_string(key)  # String([1, 2]) is "1,2"
    raise JSONConversionError(
        f"{path or 'value'} has a key of type {type(key).__name__} ({_safe_repr(key)}); "
        "JSON object keys must be strings (str, int, float, bool and None keys are converted)"
    )


def _safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        text = object.__repr__(value)
    return text if len(text) <= 60 else text[:57] + "..."


def to_json_value(value: object, path: str = "") -> Any:
    """The JSON form of data a task hands over (record data and log meta), or
    :class:`JSONConversionError` naming the key ``path`` and the type that has none.

    The rule, applied once where the task hands data over, so the store, ``--bench-json``,
    the terminal and the platform see the same data:

    * JSON values pass unchanged: ``None``, ``bool``, ``str``, ``int``, ``float`` (NaN and
      Infinity stay floats in records; the JSON writers turn them into ``null``), dicts with
      string keys, lists. Subclasses become the plain type.
    * Converted as ``JSON.stringify`` would where that is meaningful: ``datetime`` / ``date`` /
      ``time`` → ISO 8601 string (``toJSON``); non-string keys → ``String(key)`` (``1`` →
      ``"1"``, ``(1, 2)`` → ``"1,2"``); tuples, sets and frozensets → lists (sets sorted when
      their items can be sorted); objects with ``to_wire()`` or ``toJSON()`` → what that
      returns; dataclass and attrs instances → an object of their fields; an ``Enum`` → its
      value; ``Decimal`` → a number; ``UUID`` and paths → their text; numpy scalars and arrays
      → numbers and lists (``item()`` / ``tolist()``).
    * ``bytes`` / ``bytearray`` / ``memoryview`` → text: UTF-8 decoded, with ``\\xNN``
      escapes for bytes that are not UTF-8 (``b"ok\\xff"`` → ``"ok\\\\xff"``).
    * Anything else fails: functions, other objects, circular references and nesting deeper
      than :data:`MAX_JSON_DEPTH` levels.
    """
    return _convert(value, path, 0, set())


def _convert(value: object, path: str, depth: int, active: set[int]) -> Any:
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, enum.Enum):
        return _convert(value.value, path, depth, active)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="backslashreplace")
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (uuid.UUID, PurePath)):
        return str(value)
    where = path or "value"
    if depth >= MAX_JSON_DEPTH:
        if len(where) > 80:
            where = where[:60] + "..." + where[-12:]
        raise JSONConversionError(
            f"{where} is nested deeper than {MAX_JSON_DEPTH} levels "
            f"(a {type(value).__name__} at that depth); flatten the data"
        )
    marker = id(value)
    if marker in active:
        raise JSONConversionError(
            f"{where} is a circular reference (a {type(value).__name__} containing itself); "
            "JSON cannot hold cycles"
        )
    active.add(marker)
    try:
        return _convert_container(value, path, depth, active)
    finally:
        active.discard(marker)


def _convert_container(value: object, path: str, depth: int, active: set[int]) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = _json_key(key, path)
            out[name] = _convert(item, _child_path(path, name), depth + 1, active)
        return out
    if isinstance(value, (list, tuple)):
        return [_convert(item, f"{path}[{i}]", depth + 1, active) for i, item in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        items = list(value)
        with contextlib.suppress(TypeError):  # mixed types keep iteration order
            items = sorted(items)
        return [_convert(item, f"{path}[{i}]", depth + 1, active) for i, item in enumerate(items)]
    for hook in ("to_wire", "toJSON", "tolist"):
        method = getattr(value, hook, None)
        if callable(method) and not isinstance(value, type):
            return _convert(method(), path, depth + 1, active)
    item = getattr(value, "item", None)
    if hasattr(value, "dtype") and callable(item):
        return _convert(item(), path, depth + 1, active)  # a numpy scalar
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _convert(fields, path, depth, active)
    attrs_fields = getattr(type(value), "__attrs_attrs__", None)
    if attrs_fields is not None:
        fields = {a.name: getattr(value, a.name) for a in attrs_fields}
        return _convert(fields, path, depth, active)
    raise JSONConversionError(
        f"{path or 'value'} is of type {type(value).__name__} ({_safe_repr(value)}), which has "
        "no JSON form; pass numbers, strings, booleans, None, lists or dicts (or an object "
        "with to_wire())"
    )
