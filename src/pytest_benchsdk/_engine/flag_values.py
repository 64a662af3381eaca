"""Values of the run flags (``--bench-iterations 10``, upstream's ``--iterations``): parsed as
upstream parses them (JavaScript ``Number()``), bounded as the config fields are, with messages
naming the flag. Private: the glue's options and the programmatic runs' argv parser use them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pytest_benchsdk._base.js import js_to_number
from pytest_benchsdk._config.validate import (
    CONCURRENCY_WHY,
    ITERATIONS_WHY,
    MAX_CONCURRENCY,
    MAX_ITERATIONS,
    MAX_STAGGER_DELAY_MS,
)
from pytest_benchsdk._engine.schedule import GROUP_BY_VALUES, SLUG_PATTERN

__all__ = [
    "parse_group_by",
    "parse_non_negative_int",
    "parse_non_negative_number",
    "parse_positive_int",
    "parse_providers",
    "parse_slug",
    "parse_text",
]


def _js_number(text: str) -> float:
    """JavaScript's ``Number(text)`` for option values (whitespace, hex, exponents)."""
    return js_to_number(text)


def parse_text(flag: str, value: str) -> str:
    """A free-text value (``--bench-name``, ``--bench-shape``, ``--bench-run-key``)."""
    if value.strip() == "":
        raise ValueError(f"{flag} expects a value")
    return value


def parse_slug(flag: str, value: str) -> str:
    """A benchmark slug: lowercase letters, digits and dashes, not starting with a dash."""
    if not SLUG_PATTERN.match(value):
        raise ValueError(f'{flag} expects a lowercase benchmark slug (got "{value}")')
    return value


#: The bounds of the knob flags (the config fields' bounds), with why.
_FLAG_BOUNDS: dict[str, tuple[float, str]] = {
    "--bench-iterations": (MAX_ITERATIONS, ITERATIONS_WHY),
    "--bench-concurrency": (MAX_CONCURRENCY, CONCURRENCY_WHY),
    "--bench-stagger-delay-ms": (MAX_STAGGER_DELAY_MS, "one hour, in milliseconds"),
}


def _check_bound(flag: str, value: str, number: float, maximum: float | None) -> None:
    why = ""
    if maximum is None and flag in _FLAG_BOUNDS:
        maximum, why = _FLAG_BOUNDS[flag]
    if maximum is not None and number > maximum:
        reason = f": {why}" if why else ""
        raise ValueError(f'{flag} expects at most {maximum:,} (got "{value}"){reason}')


def parse_positive_int(flag: str, value: str, maximum: int | None = None) -> int:
    """An integer >= 1, with JavaScript ``Number()`` parsing as upstream, and at most
    ``maximum`` (default: the flag's bound, e.g. 1,000,000 for ``--bench-iterations``)."""
    if value.strip() == "":
        raise ValueError(f"{flag} expects a value")
    number = _js_number(value)
    if not (math.isfinite(number) and number.is_integer() and number >= 1):
        raise ValueError(f'{flag} expects an integer >= 1 (got "{value}")')
    _check_bound(flag, value, number, maximum)
    return int(number)


def parse_non_negative_int(flag: str, value: str) -> int:
    """An integer >= 0 (``--bench-warmup``)."""
    text = value.strip()
    if not text:
        raise ValueError(f"{flag} expects a value")
    number = _js_number(text)
    if not (math.isfinite(number) and number >= 0 and number == int(number)):
        raise ValueError(f'{flag} expects an integer >= 0 (got "{value}")')
    return int(number)


def parse_non_negative_number(flag: str, value: str, maximum: float | None = None) -> float:
    """A finite number >= 0, with JavaScript ``Number()`` parsing as upstream, and at most
    ``maximum`` (default: the flag's bound, 3,600,000 for ``--bench-stagger-delay-ms``)."""
    if value.strip() == "":
        raise ValueError(f"{flag} expects a value")
    number = _js_number(value)
    if not (math.isfinite(number) and number >= 0):
        raise ValueError(f'{flag} expects a number >= 0 (got "{value}")')
    _check_bound(flag, value, number, maximum)
    return int(number) if number.is_integer() else number


def parse_group_by(flag: str, value: str) -> str:
    if value not in GROUP_BY_VALUES:
        raise ValueError(f"{flag} expects 'participant' or 'round' (got \"{value}\")")
    return value


def parse_providers(values: Iterable[str], flag: str = "--bench-provider") -> tuple[str, ...]:
    """Repeatable comma lists: trimmed, empties dropped, in the order given. Values that name
    no participant at all (``--bench-provider ''``) are an error: upstream would select
    nobody and exit 0, which reads as success."""
    given = list(values)
    names: list[str] = []
    for value in given:
        names.extend(part.strip() for part in value.split(",") if part.strip())
    if given and not names:
        shown = ", ".join(f'"{value}"' for value in given)
        raise ValueError(
            f"{flag} names no participant (got {shown}): give one or more names, e.g. "
            f"{flag} a,b, or leave it out to run the file's default participants"
        )
    return tuple(names)
