"""What upstream's platform commands print: ``printData`` with Node's own formatting.

Upstream prints ``JSON.stringify(data, null, 2)`` for JSON, ``console.table(data)`` for a table,
``No results.`` for nothing (null, an empty list or object) and ``console.log`` for a bare
value. The text here is byte for byte what Node 20 writes to a pipe (no colours):

* JSON: two-space indent, object keys in JavaScript's order (integer-like keys first,
  ascending), numbers as ``Number.prototype.toString`` writes them (``1`` for ``1.0``,
  ``1e-7``, ``1e+21``).
* Tables: box-drawing borders, an ``(index)`` column, one column per key of the rows (a
  ``Values`` column for rows that are bare values), cells left-aligned and written as
  ``util.inspect`` does at depth 0 (``'text'``, ``{ a: 1 }``, ``[Object]``, ``[ 1, 2, 3, ... 1
  more item ]``), widths counted in terminal columns.

Why not Python's ``json``/``repr``: they differ in float text (``1.0``, ``1e-07``), key order
and quoting, and users compare this output with upstream's or parse it in scripts.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

__all__ = [
    "console_table",
    "inspect_cell",
    "js_keys",
    "js_number_text",
    "js_stringify",
    "print_data",
]

#: Integers beyond this lose precision in JavaScript (``JSON.parse`` gives the nearest double).
_MAX_SAFE_INTEGER = 2**53 - 1
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")
_IDENTIFIER = re.compile(r"[a-zA-Z_][a-zA-Z_0-9]*")


def js_number_text(value: float) -> str:
    """``Number.prototype.toString()`` (ECMAScript Number::toString, radix 10)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) <= _MAX_SAFE_INTEGER:
            return str(value)
        value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that round-trip, as the ECMAScript algorithm requires.
    digits_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()[1:]
    digits = "".join(str(d) for d in digits_tuple)
    k = len(digits)
    n = k + int(exponent)  # the decimal point sits after n digits
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def js_keys(obj: Mapping[str, Any]) -> list[str]:
    """``Object.keys`` order: array-index keys ascending, then the rest as inserted."""
    keys = [str(k) for k in obj]
    index = sorted((k for k in keys if _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1), key=int)
    chosen = set(index)
    return index + [k for k in keys if k not in chosen]


def js_stringify(value: Any, indent: int = 2) -> str:
    """``JSON.stringify(value, null, indent)`` for parsed JSON (``None`` is ``null``)."""
    return _stringify(value, " " * indent, "")


def _stringify(value: Any, step: str, pad: str) -> str:
    if value is None or value is True or value is False:
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return js_number_text(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    inner = pad + step
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = [
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {_stringify(value[k], step, inner)}"
            for k in js_keys(value)
        ]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, Sequence):
        if not value:
            return "[]"
        items = [f"{inner}{_stringify(v, step, inner)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(str(value), ensure_ascii=False)


# --- util.inspect, as console.table uses it -----------------------------------------------------

_META = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x5C: "\\\\"}


def _quote(text: str) -> str:
    """``util.inspect`` of a string: single quotes, else double, else backticks, escaped."""
    quote = "'"
    if "'" in text:
        if '"' not in text:
            quote = '"'
        elif "`" not in text and "${" not in text:
            quote = "`"
    out = []
    for char in text:
        code = ord(char)
        if char == quote == "'":
            out.append("\\'")
        elif code in _META:
            out.append(_META[code])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02X}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:x}")
        else:
            out.append(char)
    return quote + "".join(out) + quote


def _inspect_number(value: float) -> str:
    if isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0:
        return "-0"
    return js_number_text(value)


def _key(key: str) -> str:
    return key if _IDENTIFIER.fullmatch(key) else _quote(key)


def _inspect(value: Any, depth: int, level: int) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _inspect_number(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, Mapping):
        if level > depth:
            return "[Object]"
        if not value:
            return "{}"
        entries = [f"{_key(k)}: {_inspect(value[k], depth, level + 1)}" for k in js_keys(value)]
        return "{ " + ", ".join(entries) + " }"
    if isinstance(value, Sequence):
        if level > depth:
            return "[Array]"
        if not value:
            return "[]"
        entries = [_inspect(v, depth, level + 1) for v in value[:3]]
        more = len(value) - 3
        if more > 0:
            entries.append(f"... {more} more item{'s' if more > 1 else ''}")
        return "[ " + ", ".join(entries) + " ]"
    return _quote(str(value))


def inspect_cell(value: Any) -> str:
    """A table cell as ``console.table`` writes it: ``util.inspect`` at depth 0 (an object
    with more than two keys is ``[Object]``), at most 3 array items, on one line."""
    depth = -1 if isinstance(value, Mapping) and len(value) > 2 else 0
    return _inspect(value, depth, 0)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _width(text: str) -> int:
    """Terminal columns of ``text``, as Node's ``getStringWidth``: wide and full-width
    characters take 2, combining and zero-width ones 0, control characters 0."""
    width = 0
    for char in unicodedata.normalize("NFC", _ANSI.sub("", text)):
        code = ord(char)
        if code < 0x20 or 0x7F <= code <= 0x9F or unicodedata.combining(char):
            continue
        if 0x200B <= code <= 0x200F or 0xFE00 <= code <= 0xFE0F or code == 0xFEFF:
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def _is_primitive(value: Any) -> bool:
    return not isinstance(value, (Mapping, list, tuple))


def console_table(data: Mapping[str, Any] | Sequence[Any]) -> str:
    """``console.table(data)`` (no ``properties`` argument) as Node 20 renders it."""
    if isinstance(data, Mapping):
        index = js_keys(data)
        rows = [data[k] for k in index]
    else:
        rows = list(data)
        index = [str(i) for i in range(len(rows))]
    columns: dict[str, dict[int, str]] = {}
    values: dict[int, str] = {}
    for i, item in enumerate(rows):
        if _is_primitive(item):
            values[i] = inspect_cell(item)
            continue
        cells: Mapping[str, Any] = (
            item if isinstance(item, Mapping) else {str(j): v for j, v in enumerate(item)}
        )
        for key in js_keys(cells):
            columns.setdefault(key, {})[i] = inspect_cell(cells[key])
    # The column map is a JavaScript object too: its integer-like keys come first.
    order = js_keys(dict.fromkeys(columns))
    head = ["(index)", *order]
    body_columns: list[Callable[[int], str]] = [
        lambda i: index[i],
        *[(lambda i, c=columns[key]: c.get(i, "")) for key in order],
    ]
    if values:
        head.append("Values")
        body_columns.append(lambda i: values.get(i, ""))
    table_rows = [[cell(i) for cell in body_columns] for i in range(len(rows))]
    widths = [_width(h) for h in head]
    for row in table_rows:
        widths = [max(w, _width(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * (w + 2) for w in widths) + right

    def render(row: Sequence[str]) -> str:
        cells = [cell + " " * (w - _width(cell)) for cell, w in zip(row, widths, strict=True)]
        return "│ " + " │ ".join(cells) + " │"

    out = [line("┌", "┬", "┐"), render(head), line("├", "┼", "┤")]
    out.extend(render(row) for row in table_rows)
    out.append(line("└", "┴", "┘"))
    return "\n".join(out)


def print_data(data: Any, *, json_output: bool, write: Callable[[str], None]) -> None:
    """Upstream's ``printData``: JSON, else ``No results.`` for nothing, else a table for a
    list or an object, else the bare value."""
    if json_output:
        write(js_stringify(data))
        return
    if data is None or (isinstance(data, (Mapping, list, tuple)) and not data):
        write("No results.")
        return
    if isinstance(data, (Mapping, list, tuple)):
        write(console_table(data))
        return
    if isinstance(data, bool):
        write("true" if data else "false")
    elif isinstance(data, (int, float)):
        write(js_number_text(data))
    else:
        write(str(data))
