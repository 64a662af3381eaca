"""Terminal text of the session: each run's header after collection, the ``-v`` result lines,
and the ``benchmarks`` section at the end (rendered by :mod:`pytest_benchsdk._views.text` from
each run's summary)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._views.text import knobs_line, summary_lines, terminal_text, title_line, warmup_line
from ..results import BenchmarkRun, knobs_of
from .options import BenchOptions

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


def run_header_lines(run: BenchmarkRun) -> list[str]:
    """A benchmark's lines in the session header: name, knobs, warnings, skipped."""
    knobs = knobs_of(run.schedule)
    lines = [
        f"benchsdk: {terminal_text(run.config.benchmark_name)} [{terminal_text(run.file_key)}]",
        f"  {knobs_line(knobs)}",
    ]
    warmup = warmup_line(knobs)
    if warmup:
        lines.append(f"  {warmup}")
    lines.extend(f"  {terminal_text(warning)}" for warning in run.schedule.warnings)
    for skipped in run.schedule.skipped:
        lines.append(
            f"  Skipping {terminal_text(skipped.name)}: missing {', '.join(skipped.missing)}"
        )
    return lines


def section_lines(
    runs: Iterable[BenchmarkRun],
    options: BenchOptions,
    *,
    verbose: int = 0,
    json_written: bool = True,
) -> list[str]:
    """The ``benchmarks`` section: each run's summary, then where the results went."""
    runs = list(runs)
    lines: list[str] = []
    for run in runs:
        summary = run.summary
        if summary is None:
            lines.append(f"{terminal_text(run.config.benchmark_name)} [{run.file_key}]")
            lines.extend(f"  ERROR {terminal_text(error)}" for error in run.errors)
            lines.append("  (no summary: the session end did not get to this run)")
        else:
            lines.append(title_line(summary))
            try:
                lines.extend(summary_lines(summary, verbose=verbose))
            except Exception as exc:  # one run's odd figures never hide the other runs
                lines.append(f"  ERROR summary failed: {type(exc).__name__}: {exc}")
            # What failed after the summary was made (storing it, say).
            lines.extend(
                f"  ERROR {terminal_text(error)}"
                for error in run.errors
                if error not in summary.errors
            )
        lines.append("")
    store = options.store_path
    if store is not None and any(run.local_run_id for run in runs):
        lines.append(f"Results stored in {store}")
    if options.json_path is not None and json_written:
        lines.append(f"Results written to {options.json_path}")
    return lines
