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
