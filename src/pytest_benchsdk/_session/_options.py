"""The options a bench session runs with, as plain values (no pytest).

The pytest glue parses its ``--bench-*`` options and ini keys (its option table) into
:class:`~pytest_benchsdk._plugin.options.settings.BenchOptions`, a subclass that adds what only
the glue needs (collection, ``--bench-check``, ``--bench-resubmit``); the programmatic runs make a
:class:`SessionOptions` from upstream's ``bench run`` flags or take one from the caller.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from pytest_benchsdk._analysis.baseline import CompareRule
from pytest_benchsdk._base.defaults import (
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_FAILED_ITERATIONS,
    DEFAULT_INSTRUCTION_CALLS,
    DEFAULT_NOISE_THRESHOLD,
    DEFAULT_SCORE_RESAMPLES,
    DEFAULT_UPLOAD_TIMEOUT_S,
    DEFAULT_WARNINGS,
)
from pytest_benchsdk._engine.schedule import RunArgs

__all__ = [
    "FAILED_ITERATIONS_MODES",
    "SessionOptions",
    "parse_failed_iterations",
]

#: ``fail``: a failed iteration fails its run (pytest's convention, the plugin's default);
#: ``record``: it is data (upstream's rule), the run passes unless a threshold, comparison or
#: warning rule fails it.
FAILED_ITERATIONS_MODES = ("fail", "record")


def parse_failed_iterations(flag: str, value: str) -> str:
    """``fail`` or ``record`` (any case, surrounding blanks ignored)."""
    text = value.strip().lower()
    if text not in FAILED_ITERATIONS_MODES:
        raise ValueError(f'{flag} expects fail or record (got "{value}")')
    return text


@attrs.frozen(kw_only=True)
class SessionOptions:
    """What a bench session (a pytest session, or a programmatic run) is asked to do.

    ``store_path`` None: no results store (a temporary one still serves as the platform outbox
    outside dry runs); ``store_origin`` says where the path came from, as messages name it.
    """

    run_args: RunArgs = attrs.Factory(RunArgs)
    dry_run: bool = False
    store_path: Path | None = None
    #: ``--bench-store``, the ini file's ``bench_store``, or the default.
    store_origin: str = "--bench-store"
    json_path: Path | None = None
    #: Where the Markdown summary goes.
    markdown_path: Path | None = None
    #: Where the session's HTML report goes, or None.
    html_path: Path | None = None
    #: The exports to write (``--bench-export FORMAT:PATH``), in the order given.
    exports: tuple[tuple[str, Path], ...] = ()
    base_url: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    #: The platform organization (else resolved as upstream).
    org: str | None = None
    strict_upload: bool = False
    upload_timeout_s: float = DEFAULT_UPLOAD_TIMEOUT_S
    #: ``--bench-compare``'s REF (``latest``, a baseline name, a run id, a JSON file), or None.
    compare: str | None = None
    compare_fail: bool = False
    #: ``--bench-compare-fail=STAT:LIMIT`` (pytest-benchmark's expressions); with them alone
    #: (no bare ``--bench-compare-fail``) the verdicts do not fail the session, these do.
    compare_rules: tuple[CompareRule, ...] = ()
    #: ``--bench-compare-noise`` as a fraction (0.02 for 2 %).
    compare_noise: float = DEFAULT_NOISE_THRESHOLD
    #: ``--bench-compare-count-noise`` as a fraction (0.005 for 0.5 %): a count's threshold.
    compare_count_noise: float = DEFAULT_COUNT_THRESHOLD
    #: ``--bench-compare-on``: the metrics whose verdicts count (empty: the default rows).
    compare_on: tuple[str, ...] = ()
    #: ``--bench-columns``: pytest-benchmark's columns to show (empty: no such table).
    columns: tuple[str, ...] = ()
    #: ``--benchmark-sort``: the order of that table's rows (None: the summary's order).
    table_sort: str | None = None
    #: ``--benchmark-time-unit``: the unit of its time columns (None: one per value).
    table_time_unit: str | None = None
    #: ``--benchmark-name``: how its rows are named (``normal``, ``short``, ``long``, ``trial``).
    table_names: str = "normal"
    #: ``--benchmark-save``/``-autosave``: pytest-benchmark's file of the benchmarked tests
    #: (``.benchmarks/<machine>/NNNN_NAME.json``) and whether it holds every round's time.
    pytest_benchmark_save: tuple[Path, bool] | None = None
    #: ``--bench-save``: the baseline name this session's runs are kept under, or None.
    save_as: str | None = None
    #: ``--bench-history-from``: ``now`` (this session's runs start their benchmarks'
    #: histories afresh) or a run id (resolved and marked when the session starts), or None.
    history_from: str | None = None
    score_resamples: int = DEFAULT_SCORE_RESAMPLES
    #: ``warn``, ``full`` (each warning in full, as ``-v`` shows them), ``error`` or ``off``.
    warnings: str = DEFAULT_WARNINGS
    #: ``--bench-warnings-ignore``: warning codes left out.
    warnings_ignore: frozenset[str] = frozenset()
    #: ``fail`` or ``record`` (:data:`FAILED_ITERATIONS_MODES`).
    failed_iterations: str = DEFAULT_FAILED_ITERATIONS
    #: ``--bench-instructions``: the measured regions count instructions (under callgrind).
    instructions: bool = False
    #: ``--bench-instructions-calls``: counted calls after the warm one, where a loop counts.
    instructions_calls: int = DEFAULT_INSTRUCTION_CALLS

    def store_problem(self, problem: str) -> str:
        """A message about the store that says where its path came from; ``problem`` names the
        path (``cannot use results store <path>: ...``)."""
        if self.store_origin.startswith("--"):
            return f"{self.store_origin}: {problem}"
        return (
            f"{problem} (the path is {self.store_origin}; choose another with --bench-store PATH, "
            "or run without a store with --bench-no-store)"
        )
