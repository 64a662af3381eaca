"""pytest-benchmark's JSON file (``--benchmark-json``, ``.benchmarks/<machine>/NNNN_name.json``)
of the benchmarked tests of finished runs.

Renders the model and computes nothing: each benchmarked test's
:class:`~pytest_benchsdk.results.FixtureStats` (its identity and pytest-benchmark's statistics,
computed by the results layer) becomes one entry of ``benchmarks``, in pytest-benchmark's
order of keys: ``group, name, fullname, params, param, extra_info, options, stats{min, max,
mean, stddev, rounds, median, iqr, q1, q3, iqr_outliers, stddev_outliers, outliers, ld15iqr,
hd15iqr, ops, total, data, iterations}``. ``machine_info`` and ``commit_info`` are the run
environment's (pytest-benchmark's hooks made them); ``datetime`` is when the last run finished;
``version`` is the version of pytest-benchmark's format written (its 5.x). Participants of
bench files (no benchmarked test) and tests that did not pass are left out, as
pytest-benchmark leaves out tests with errors.

``pytest-benchmark compare FILE`` reads it, and github-action-benchmark's ``pytest`` tool
(``benchmarks[].{fullname, stats.ops, stats.stddev, stats.mean, stats.rounds}``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from pytest_benchsdk._analysis.pytest_benchmark import STAT_FIELDS
from pytest_benchsdk.results import FixtureStats, RunSummary

__all__ = ["FORMAT_VERSION", "PYTEST_BENCHMARK", "benchmark_entries", "pytest_benchmark_document"]

#: The export format's name (``--bench-export pytest-benchmark:PATH``).
PYTEST_BENCHMARK: Final = "pytest-benchmark"
#: The pytest-benchmark version whose file format this is.
FORMAT_VERSION: Final = "5.1.0"


def _tests(summaries: Sequence[RunSummary]) -> list[FixtureStats]:
    return [
        p.fixture
        for summary in summaries
        for p in summary.participants
        if p.fixture is not None and p.passed
    ]


def benchmark_entries(
    summaries: Sequence[RunSummary], *, include_data: bool = True
) -> list[dict[str, Any]]:
    """The ``benchmarks`` list: one entry per benchmarked test that passed."""
    out = []
    for test in _tests(summaries):
        stats = {key: test.stats[key] for key in STAT_FIELDS if key in test.stats}
        iterations = stats.pop("iterations", 1)
        if include_data:
            stats["data"] = list(test.data)
        stats["iterations"] = iterations
        out.append(
            {
                "group": test.group,
                "name": test.name,
                "fullname": test.fullname,
                "params": None if test.params is None else dict(test.params),
                "param": test.param,
                "extra_info": dict(test.extra_info),
                "options": dict(test.options),
                **({"cprofile": [dict(row) for row in test.cprofile]} if test.cprofile else {}),
                "stats": stats,
            }
        )
    return out


def _datetime(summaries: Sequence[RunSummary]) -> str | None:
    finished = [s.finished_at for s in summaries if s.finished_at]
    if not finished:
        return None
    last = max(finished)
    return last[:-1] + "+00:00" if last.endswith("Z") else last


def pytest_benchmark_document(
    summaries: Sequence[RunSummary], *, include_data: bool = True
) -> dict[str, Any]:
    """The whole file: ``machine_info``, ``commit_info``, ``benchmarks``, ``datetime``,
    ``version``."""
    environment = summaries[0].environment if summaries else None
    machine_info = environment.machine_info if environment is not None else None
    commit_info = environment.commit_info if environment is not None else None
    return {
        "machine_info": dict(machine_info or {}),
        "commit_info": dict(commit_info or {}),
        "benchmarks": benchmark_entries(summaries, include_data=include_data),
        "datetime": _datetime(summaries),
        "version": FORMAT_VERSION,
    }
