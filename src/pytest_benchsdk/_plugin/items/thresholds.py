"""Threshold items: one pytest item per participant × threshold, after its iterations.

``bench_x.py::threshold[e2b-tti_ms-p95<3000]`` passes or fails on what the participant's
iterations in this process measured (the process's runtime keeps them), judged on the
participant's summary exactly as the session end judges it
(:func:`pytest_benchsdk.results.participant_verdicts`), so IDEs, ``-k`` and junitxml show each
verdict and every view says the same. The item carries the participant's xdist group, so under
``--dist loadgroup`` it runs on the worker that ran the iterations, after them; and whenever a
threshold item is selected (a node id, ``-k``, ``--lf`` …), so are the iterations it judges
(see :mod:`pytest_benchsdk._plugin.items.selection`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ExceptionInfo, TerminalRepr

from pytest_benchsdk._config.thresholds import Threshold
from pytest_benchsdk._engine.schedule import BenchmarkSchedule, SkippedParticipant
from pytest_benchsdk._plugin.distribution.loadgroup import LoadgroupNodeId
from pytest_benchsdk._plugin.runtime.catalog import Catalog
from pytest_benchsdk._plugin.runtime.process import ProcessRuntime
from pytest_benchsdk.results import participant_verdicts

__all__ = [
    "THRESHOLD_PROPERTY",
    "ThresholdBreach",
    "ThresholdItem",
    "threshold_item_name",
    "threshold_item_names",
    "threshold_items",
]

#: The ``user_properties`` key of a threshold item's report: which threshold it judged.
THRESHOLD_PROPERTY = "benchsdk_threshold"


class ThresholdBreach(AssertionError):
    """A threshold did not hold (its message is the one line the report shows)."""


class ThresholdItem(LoadgroupNodeId, pytest.Item):
    """One threshold of one participant of one bench file."""

    def __init__(
        self,
        *,
        file_key: str,
        participant: str,
        threshold: Threshold,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._structure_id()
        self.file_key = file_key
        self.participant = participant
        self.threshold = threshold
        # Reports carry it to the controller (also from xdist workers) and into junitxml.
        self.user_properties.append(
            (
                THRESHOLD_PROPERTY,
                {"file": file_key, "participant": participant, "label": threshold.label},
            )
        )

    def runtest(self) -> None:
        judged = ProcessRuntime.of(self.config).judged(self.file_key, self.participant)
        if judged is None or judged.samples.count == 0:
            pytest.skip(f"no iteration of {self.participant} ran in this process")
        _, schedule = Catalog.of(self.config).files[self.file_key]
        (verdict,) = participant_verdicts(
            schedule.config, self.participant, judged.samples, judged.records, [self.threshold]
        )
        if not verdict.passed:
            raise ThresholdBreach(verdict.message())

    def repr_failure(  # type: ignore[override]
        self, excinfo: ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, ThresholdBreach):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # A line is needed (skip reports point at one): the top of the bench file.
        return self.path, 0, self.name


def threshold_item_name(participant: str, threshold: Threshold) -> str:
    """The item name of one participant's threshold."""
    return f"threshold[{participant}-{threshold.label}]"


def threshold_item_names(
    schedule: BenchmarkSchedule, names: set[str]
) -> dict[str, list[Threshold]]:
    """The thresholds whose items are among ``names``, per participant (what a session
    judges: a ``-k`` that deselects a threshold item does not judge it)."""
    selected: dict[str, list[Threshold]] = {}
    for participant in schedule.requested:
        for threshold in schedule.thresholds:
            if threshold_item_name(participant, threshold) in names:
                selected.setdefault(participant, []).append(threshold)
    return selected


def threshold_items(
    parent: pytest.Module,
    last_iteration: pytest.Item,
    thresholds: tuple[Threshold, ...],
    skipped: SkippedParticipant | None,
) -> list[ThresholdItem]:
    """The participant's threshold items, in the group of its ``last_iteration``."""
    bench = last_iteration.bench  # type: ignore[attr-defined]
    participant = bench.participant.name
    group = last_iteration.get_closest_marker("xdist_group")
    items = []
    for threshold in thresholds:
        item = ThresholdItem.from_parent(
            parent,
            name=threshold_item_name(participant, threshold),
            file_key=bench.file_key,
            participant=participant,
            threshold=threshold,
        )
        item.keywords[participant] = True
        item.add_marker(pytest.mark.bench)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(*group.args, **group.kwargs))
        if skipped is not None:
            item.add_marker(pytest.mark.skip(reason=skipped.reason))
        items.append(item)
    return items
