"""Terminal text of the session: the ``-v`` result lines; each run's header and the
``benchmarks`` section at the end are the session's (:mod:`pytest_benchsdk._session`, rendered by
:mod:`pytest_benchsdk._views.text` from each run's summary), re-exported here."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final

from pytest_benchsdk._session import run_header_lines, section_lines
from pytest_benchsdk._views.escape import terminal_text

__all__ = [
    "readable",
    "run_header_lines",
    "section_lines",
    "verbose_detail",
]

#: Characters of a record's data a ``-v`` result line shows at most.
MAX_DETAIL_CHARS: Final = 500


def readable(value: Any) -> Any:
    """A JSON value with its floats rounded for reading: 3 significant digits, never fewer
    than the integer part (``0.48585…`` → ``0.486``, ``22.84…`` → ``22.8``, ``1234.5`` →
    ``1234``), like the summary's tables. Ints, bools, strings and non-finite floats stay."""
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0:
            return value
        decimals = max(0, 2 - math.floor(math.log10(abs(value))))
        rounded = round(value, decimals)
        return int(rounded) if decimals == 0 and abs(rounded) < 1e15 else rounded
    if isinstance(value, Mapping):
        return {key: readable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [readable(item) for item in value]
    return value


def verbose_detail(data: object) -> str:
    """A record's ``data`` after ``PASSED`` in ``-v`` lines: compact JSON, numbers rounded
    by :func:`readable` (the stored record keeps full precision), on one line, at most
    :data:`MAX_DETAIL_CHARS` characters (then how much was left out)."""
    text = json.dumps(readable(data), separators=(",", ":"), ensure_ascii=False, default=str)
    text = terminal_text(text)
    if len(text) > MAX_DETAIL_CHARS:
        left = len(text) - MAX_DETAIL_CHARS
        text = f"{text[:MAX_DETAIL_CHARS]}… ({left:,} more characters; --bench-json has all)"
    return text
