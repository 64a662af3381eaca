"""Numbers for people: three significant digits, and times in the unit that reads best.

A leaf (it imports nothing of the package): the views (terminal, Markdown, ``show``, the HTML
report) and the messages of the engine (threshold verdicts, run warnings) write every number
through it, so a value reads the same everywhere. JSON and the store keep full precision.

A *time unit* is ``ns``, ``us``/``µs``, ``ms`` or ``s``; a value in one is shown in the unit that
puts it between 1 and 1000 (``0.0112 ms`` → ``11.2 µs``, ``1834 ms`` → ``1.83 s``). Other units
are kept as they are, but a *count unit* (``instr``: instructions, ``--bench-instructions``): a
count is never a time, and reads as a whole number with thousands separators below ten thousand
(``9,731 instr``), above with an SI prefix at three significant digits (``1.23 M instr``); a
change between two counts reads exact (``1,234,567 → 1,240,112 instr``), since a count that moved
by a few instructions moved.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = [
    "COUNT_UNITS",
    "TIME_UNITS",
    "change_of_values",
    "change_text",
    "column_scale",
    "count_scale",
    "exact_count",
    "in_unit",
    "is_count_unit",
    "is_finite",
    "is_time_unit",
    "limit_in_unit",
    "percent",
    "phase_subject",
    "quantity",
    "row_scale",
    "significant",
    "stat_triple",
    "time_scale",
]

#: Seconds per unit of each time unit the views scale.
TIME_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
#: Units whose values are counts (instructions): whole numbers, SI prefixes, never a time.
COUNT_UNITS: Final = frozenset({"instr"})
#: SI prefixes of a count from the smallest up, with their size; a count below the first
#: threshold is written whole (``9,731``).
_COUNT_PREFIXES: Final = (("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12))
_WHOLE_BELOW: Final = 1e4
#: Display units from the smallest up, with their size in seconds.
_SCALE: Final = (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0))


def is_finite(value: object) -> bool:
    """A number JavaScript sees as finite: a finite float, or an int a float can hold (a
    larger one is Infinity there); never a bool, never anything else. The one home of the rule:
    it never raises, unlike :func:`math.isfinite` on a huge int."""
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int):
        return -_FLOAT_MAX <= value <= _FLOAT_MAX
    return False


_FLOAT_MAX: Final = sys.float_info.max


def is_time_unit(unit: str | None) -> bool:
    return unit in TIME_UNITS


def is_count_unit(unit: str | None) -> bool:
    return unit in COUNT_UNITS


def count_scale(reference: float) -> tuple[float, str]:
    """The divisor and SI prefix for counts like ``reference``: ``(1, "")`` below ten thousand
    (written whole), else the largest prefix in which ``|reference|`` is at least 1."""
    magnitude = abs(reference) if math.isfinite(reference) else 0.0
    if magnitude < _WHOLE_BELOW:
        return 1.0, ""
    chosen = _COUNT_PREFIXES[0]
    for prefix, size in _COUNT_PREFIXES:
        # Three significant digits first, so 999.96 k reads 1.00 M, not 1000 k.
        if float(f"{magnitude:.2e}") >= size:
            chosen = (prefix, size)
    return chosen[1], chosen[0]


def _whole(value: float) -> str:
    """A count written whole with thousands separators (``9,731``); below 100 a per-call
    figure keeps three significant digits (``12.5``)."""
    if not math.isfinite(value):
        return significant(value)
    if abs(value) < 100:
        return significant(value)
    return f"{round(value):,}"


def exact_count(value: float) -> str:
    """A count in full, thousands separated (``1,234,567``): where a few instructions matter."""
    return _whole(value)


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, never fewer than its integer part
    (``0.04213`` → ``0.0421``, ``22.84`` → ``22.8``, ``1234.5`` → ``1235``); ``-`` for NaN,
    ``inf``/``-inf`` as such."""
    if value != value:
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:.0f}"  # the integer part is never cut
    # Rounded to ``digits`` first: the rounding may carry into a new digit (9.996 → 10.0,
    # 0.9996 → 1.00), and the decimals follow the rounded value.
    rounded = float(f"{value:.{digits - 1}e}")
    magnitude = math.floor(math.log10(abs(rounded)))
    return f"{rounded:.{max(0, digits - 1 - magnitude)}f}"


def time_scale(reference: float, unit: str) -> tuple[float, str]:
    """The factor and display unit for time values like ``reference`` (in ``unit``): the
    largest unit in which ``|reference|``, at three significant digits, is at least 1 (ns for
    anything smaller). The rounding counts: ``0.0009996 ms`` is ``1.00 µs``, not ``1000 ns``."""
    seconds = abs(reference) * TIME_UNITS[unit]
    if seconds > 0 and math.isfinite(seconds):
        # Three significant digits first, so a value that rounds up into the next unit is
        # written in it.
        seconds = float(f"{seconds:.2e}")
    chosen = _SCALE[0]
    for name, size in _SCALE:
        if seconds >= size * (1 - 1e-12):
            chosen = (name, size)
    name, size = chosen
    return TIME_UNITS[unit] / size, name


def in_unit(
    values: Sequence[float], unit: str | None, reference: float | None = None, *, sep: str = "/"
) -> str:
    """``values`` joined with ``sep`` and one unit after them, all in the display unit of
    ``reference`` (default: the first value): ``11.2/13.0/20.1 µs``. Without a time unit the
    values keep ``unit`` (``0.95/0.97/0.99``, ``12/14/20 req``, ``45.8 → 63.3 MB/s``)."""
    if not values:
        return "-"
    if unit and is_time_unit(unit):
        base = values[0] if reference is None else reference
        factor, shown = time_scale(base if math.isfinite(base) else 0.0, unit)
        text = sep.join(significant(v * factor) for v in values)
        return f"{text} {shown}"
    if unit and is_count_unit(unit):
        base = values[0] if reference is None else reference
        size, prefix = count_scale(base)
        if not prefix:
            return f"{sep.join(_whole(v) for v in values)} {unit}"
        return f"{sep.join(significant(v / size) for v in values)} {prefix} {unit}"
    text = sep.join(significant(v) for v in values)
    return f"{text} {unit}" if unit else text


def change_of_values(before: float, after: float, unit: str | None) -> str:
    """``before → after`` in one unit, the one that fits the larger (``0.580 → 2.90 µs``);
    counts exact (``1,234,567 → 1,240,112 instr``)."""
    if is_count_unit(unit):
        return f"{exact_count(before)} → {exact_count(after)} {unit}"
    return in_unit([before, after], unit, row_scale([before, after]), sep=" → ")


def limit_in_unit(limit: float, unit: str, reference: float) -> str:
    """A time limit (in ``unit``) in the display unit of ``reference`` (the observed value's,
    so a line never reads ``7.93 µs, threshold < 3000 ns``), at up to six significant digits
    (a limit is what the user wrote, not a measurement): ``3 µs``; a count limit with the
    observed count's prefix (``2 M instr``)."""
    if is_count_unit(unit):
        size, prefix = count_scale(reference)
        scaled = float(f"{limit / size:.6g}")
        return f"{scaled:,g} {prefix} {unit}" if prefix else f"{scaled:,g} {unit}"
    factor, shown = time_scale(reference if math.isfinite(reference) else 0.0, unit)
    return f"{float(f'{limit * factor:.6g}'):g} {shown}"


def quantity(value: float | None, unit: str | None) -> str:
    """One value with its unit, a time scaled (``93.5 ms``, ``11.2 µs``, ``0.97``)."""
    if value is None:
        return "-"
    return in_unit([value], unit)


def row_scale(values: Sequence[float]) -> float:
    """The value a row of times is scaled by: its largest finite magnitude, so no number of the
    row needs more than three digits before the point (``0.723/12.8/12.8 ms``, never
    ``723/12837/12837 µs``)."""
    finite = [abs(v) for v in values if math.isfinite(v)]
    return max(finite, default=0.0)


def stat_triple(
    median: float, p95: float, p99: float, unit: str | None, reference: float | None = None
) -> str:
    """``med/p95/p99`` with one unit: a time in the display unit of ``reference`` (a table
    column's, so that every row of it reads in one unit: :func:`column_scale`), else scaled by
    the largest of them (:func:`row_scale`), as a count always is (``9,732 instr`` whole beside
    ``1.23 M instr``, never ``0.00973 M instr``)."""
    own = row_scale([median, p95, p99])
    scale = reference if reference and is_time_unit(unit) else own
    return in_unit([median, p95, p99], unit, scale)


def column_scale(medians: Iterable[float | None]) -> float | None:
    """The value a column of ``med/p95/p99`` cells is scaled by: its largest finite median,
    so every row reads in one unit (``75.5/98.0/1100 ms`` beside ``127/140/145 ms``, never
    ``0.0755/0.0980/1.10 s``); None without a positive one (each row then scales itself)."""
    finite = [abs(m) for m in medians if m is not None and math.isfinite(m) and m != 0]
    return max(finite, default=None)


def percent(share: float) -> str:
    """A share 0–1 as a whole percentage (``97%``); ``-`` for NaN."""
    return "-" if share != share else f"{share:.0%}"


def change_text(change: float) -> str:
    """A relative change as a signed percentage (``+12.3%``, ``+3384%`` from +1,000 % on, where
    a tenth of a percent says nothing), and from 100 times on as the factor (``24147×``,
    ``1.49e+17×``: a band that wide, from a history whose runs differ by orders of magnitude,
    is unreadable as a percentage); ``n/a`` for NaN."""
    if change != change:
        return "n/a"
    if math.isinf(change):
        return "+inf%" if change > 0 else "-inf%"
    if change >= 99:
        factor = 1 + change
        return f"{factor:.0f}×" if factor < 1e6 else f"{factor:.3g}×"
    if abs(change) >= 9.9995:
        return f"{change * 100:+.0f}%"
    return f"{change * 100:+.1f}%"


def phase_subject(participant: str, phase: str | None) -> str:
    """Who a row is about, in one form for every view and table: ``e2b``, or ``e2b · cold``
    for one phase of it (a phase row under its participant too, so that the terminal, Markdown,
    the report, comparisons, history and warnings all name a phase the same way)."""
    return participant if phase is None else f"{participant} · {phase}"
