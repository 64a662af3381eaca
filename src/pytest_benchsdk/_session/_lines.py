"""A session's text for people: each run's header, and the summary section at the end
(rendered by :mod:`pytest_benchsdk._views.text` from each run's summary). The pytest glue writes
these lines to the terminal; ``pytest-benchsdk run`` prints them."""

from __future__ import annotations

from collections.abc import Iterable

from pytest_benchsdk._session._options import SessionOptions
from pytest_benchsdk._views.escape import terminal_text
from pytest_benchsdk._views.text import (
    knobs_line,
    summary_lines,
    title_line,
    warmup_line,
)
from pytest_benchsdk.results import BenchmarkRun

__all__ = ["run_header_lines", "section_lines"]


def _short_warning(warning: str) -> str:
    """A header warning in one line: up to its first colon, the rest with ``-v``."""
    head, colon, rest = warning.partition(": ")
    return f"{head} (-v says why)" if colon and rest else warning


def run_header_lines(run: BenchmarkRun, *, verbose: int = 0) -> list[str]:
    """A benchmark's lines in the session header: name, knobs, warnings, skipped. ``verbose``
    is pytest's verbosity: with ``-q`` the name only; by default each warning in one line
    (its reason with ``-v``)."""
    knobs = run.knobs
    lines = [
        f"benchsdk: {terminal_text(run.config.benchmark_name)} [{terminal_text(run.file_key)}]"
    ]
    if verbose < 0:
        return lines
    lines.append(f"  {knobs_line(knobs)}")
    warmup = warmup_line(knobs)
    if warmup:
        lines.append(f"  {warmup}")
    lines.extend(
        f"  {terminal_text(warning if verbose > 0 else _short_warning(warning))}"
        for warning in run.schedule.warnings
    )
    for skipped in run.schedule.skipped:
        lines.append(
            f"  Skipping {terminal_text(skipped.name)}: missing {', '.join(skipped.missing)}"
        )
    return lines


def section_lines(
    runs: Iterable[BenchmarkRun],
    options: SessionOptions,
    *,
    verbose: int = 0,
    json_written: bool = True,
    stored: bool = True,
) -> list[str]:
    """The ``benchmarks`` section: each run's summary, then where the results went
    (``stored``: False when the store was found damaged, whose line says where they are)."""
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
                table_options = {
                    "sort": options.table_sort,
                    "time_unit": options.table_time_unit,
                    "names": options.table_names,
                }
                lines.extend(
                    summary_lines(
                        summary,
                        verbose=verbose,
                        columns=options.columns,
                        table_options=table_options,
                        warnings_full=options.warnings == "full",
                    )
                )
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
    if stored and store is not None and any(run.local_run_id for run in runs):
        lines.append(f"Results stored in {store}")
    if options.json_path is not None and json_written:
        lines.append(f"Results written to {options.json_path}")
    return lines
