"""Hooks a ``conftest.py`` (or another plugin) can implement to observe and adjust benchmarks.

All hooks run in the controller process only (the main pytest process; with xdist, the
controller), after the plugin has recorded what the hook receives.

Example::

    # conftest.py
    def pytest_benchsdk_record(config, benchmark, participant, record):
        if record.status != "success":
            print(f"{benchmark}/{participant} #{record.task_index} failed: {record.error_code}")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_benchsdk._analysis.scoring import ScoreResult
    from pytest_benchsdk.records import TaskRecord

# (PytestBenchmarkHooks, pytest-benchmark's own specifications, are not this plugin's hooks:
# the plugin declares them when pytest-benchmark does not.)
__all__ = [
    "pytest_benchsdk_record",
    "pytest_benchsdk_scores",
    "pytest_benchsdk_summary",
]

hookspec = pytest.hookspec


@hookspec
def pytest_benchsdk_record(
    config: pytest.Config, benchmark: str, participant: str, record: TaskRecord
) -> None:
    """Called for each iteration's record as it reaches the controller.

    The record is already in the local store. ``benchmark`` is the benchmark slug (after
    ``--bench-shape`` / ``--bench-benchmark``), ``participant`` the participant name.
    Records are immutable; use the scores/summary hooks to change what is reported.
    """


@hookspec
def pytest_benchsdk_scores(
    config: pytest.Config, benchmark: str, results: list[ScoreResult]
) -> None:
    """Called once per benchmark with its score rows, before they are stored, printed or sent.

    Mutate ``results`` in place to adjust them (replace, append or remove rows; ``ScoreResult``
    is immutable, so use ``attrs.evolve(row, composite_score=...)``).
    """


@hookspec
def pytest_benchsdk_summary(config: pytest.Config, benchmark: str, summary: dict[str, Any]) -> None:
    """Called with the run summary (the platform's camelCase JSON: ``run``, ``results``,
    ``scoring``) before it is written to ``--bench-json`` or sent. Mutate it in place."""


class PytestBenchmarkHooks:
    """pytest-benchmark 5's hook specifications, with its signatures, so that a ``conftest.py``
    written for it works here: declared by the plugin when pytest-benchmark itself is not
    active (when it is, its own are). What each does here is in the migration guide
    (``docs/howto/pytest-benchmark.md``): the machine and commit info hooks fill the run's
    ``machine_info``/``commit_info``, the JSON hooks shape ``--bench-export
    pytest-benchmark``; ``pytest_benchmark_scale_unit``, ``pytest_benchmark_group_stats`` and
    ``pytest_benchmark_compare_machine_info`` are declared (a conftest implementing them
    loads) but not called: they shape pytest-benchmark's own tables and comparison.
    """

    @staticmethod
    @hookspec(firstresult=True)
    def pytest_benchmark_scale_unit(  # type: ignore[no-untyped-def]
        config, unit, benchmarks, best, worst, sort
    ):
        """pytest-benchmark's table unit scaling (``(prefix, scale)``). Not called here."""

    @staticmethod
    @hookspec(firstresult=True)
    def pytest_benchmark_generate_machine_info(config):  # type: ignore[no-untyped-def]
        """Replaces the run's ``machine_info`` (a dict)."""

    @staticmethod
    @hookspec
    def pytest_benchmark_update_machine_info(config, machine_info):  # type: ignore[no-untyped-def]
        """Adds to the run's ``machine_info`` (mutate it)."""

    @staticmethod
    @hookspec(firstresult=True)
    def pytest_benchmark_generate_commit_info(config):  # type: ignore[no-untyped-def]
        """Replaces the run's ``commit_info`` (a dict)."""

    @staticmethod
    @hookspec
    def pytest_benchmark_update_commit_info(config, commit_info):  # type: ignore[no-untyped-def]
        """Adds to the run's ``commit_info`` (mutate it)."""

    @staticmethod
    @hookspec(firstresult=True)
    def pytest_benchmark_group_stats(config, benchmarks, group_by):  # type: ignore[no-untyped-def]
        """pytest-benchmark's grouping of its tables. Not called here."""

    @staticmethod
    @hookspec(firstresult=True)
    def pytest_benchmark_generate_json(  # type: ignore[no-untyped-def]
        config, benchmarks, include_data, machine_info, commit_info
    ):
        """Replaces the whole pytest-benchmark JSON document (a dict)."""

    @staticmethod
    @hookspec
    def pytest_benchmark_update_json(config, benchmarks, output_json):  # type: ignore[no-untyped-def]
        """Adds fields to the pytest-benchmark JSON document (mutate ``output_json``)."""

    @staticmethod
    @hookspec
    def pytest_benchmark_compare_machine_info(  # type: ignore[no-untyped-def]
        config, benchmarksession, machine_info, compared_benchmark
    ):
        """pytest-benchmark's check of a compared file's machine. Not called here."""


#: The names of :class:`PytestBenchmarkHooks`.
PYTEST_BENCHMARK_HOOKS = tuple(
    name for name in vars(PytestBenchmarkHooks) if name.startswith("pytest_benchmark_")
)
