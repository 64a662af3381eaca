"""Bench files under pytest-xdist: which ``--dist`` a session runs with, what the workers are
told, and the controller's part (the scheduler for ``-n`` without ``--dist``, plain report ids).

A bench file *needs one process per group* when its schedule says so
(:attr:`~pytest_benchsdk.schedule.BenchmarkSchedule.grouping_reasons`: concurrency > 1 runs a
participant's iterations as one pool, thresholds judge the iterations of their process, warm-up
warms the process that runs the measured iterations). Then:

* ``--dist loadgroup`` (or ``loadfile`` / ``loadscope``, which keep a file's items together):
  runs as asked;
* ``-n`` without ``--dist``: ``--dist loadgroup`` is applied (xdist would pick ``load``), and
  the header says so once;
* any other ``--dist``: a collection error of that file, naming the reason.

Workers re-parse the controller's command line, so they cannot tell an explicit ``--dist`` from
xdist's default: the controller sends its decision in ``workerinput``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_benchsdk._engine.schedule import BenchmarkSchedule
from pytest_benchsdk._plugin.distribution.loadgroup import plain_node_id
from pytest_benchsdk._plugin.options import n_without_dist
from pytest_benchsdk._plugin.runtime.catalog import Catalog

__all__ = [
    "DistributedBench",
    "dist_mode",
    "grouping_problem",
    "tags_items",
    "xdist_distributes",
]

#: ``workerinput`` key: the controller's ``--dist`` (``auto``: ``-n`` without ``--dist``).
WORKERINPUT_KEY = "benchsdk_dist"
#: Modes that keep every item of a bench file (so every group) in one process.
_KEEPS_GROUPS = ("loadgroup", "loadfile", "loadscope")


def xdist_distributes(config: pytest.Config) -> bool:
    """Whether this (controller) process hands items to xdist workers (xdist's own test)."""
    return (
        not config.getoption("collectonly")
        and getattr(config.option, "dist", "no") not in (None, "no")
        and bool(getattr(config.option, "tx", None))
    )


def dist_mode(config: pytest.Config) -> str | None:
    """The session's ``--dist`` as the controller decided it (``auto``: ``-n`` without
    ``--dist``, where bench files that need it get loadgroup); None outside an xdist worker."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return None
    mode = workerinput.get(WORKERINPUT_KEY)
    if isinstance(mode, str):
        return mode
    # A controller without this plugin's part: only xdist's own record is there.
    return "loadgroup" if getattr(config.option, "loadgroup", False) else "load"


def tags_items(config: pytest.Config, schedule: BenchmarkSchedule) -> bool:
    """Whether a worker shows this file's items to xdist's scheduler with their group."""
    mode = dist_mode(config)
    return mode == "loadgroup" or (mode == "auto" and bool(schedule.grouping_reasons))


def grouping_problem(
    config: pytest.Config, path: object, schedule: BenchmarkSchedule
) -> str | None:
    """Why this file cannot run under the session's explicit ``--dist`` (None when it can)."""
    mode = dist_mode(config)
    reasons = schedule.grouping_reasons
    if mode is None or mode == "auto" or mode in _KEEPS_GROUPS or not reasons:
        return None
    concurrency = schedule.resolved.concurrency
    if concurrency > 1:
        return (
            f"{path}: concurrency {concurrency} runs a participant's iterations together, so "
            "they must stay on one xdist worker: run with --dist loadgroup, or use "
            "--bench-concurrency 1."
        )
    if schedule.thresholds:
        return (
            f"{path}: thresholds judge a participant's iterations in the process that ran "
            "them, so a participant's items must stay on one xdist worker: run with --dist "
            "loadgroup (or give -n without --dist, which applies it)."
        )
    return (
        f"{path}: warm-up iterations warm the process that runs the participant's measured "
        "iterations, so a participant's items must stay on one xdist worker: run with --dist "
        "loadgroup (or give -n without --dist, which applies it), or use --bench-warmup 0."
    )


class DistributedBench:
    """The xdist controller's part: tells the workers the mode, schedules ``-n`` without
    ``--dist`` as loadgroup, keeps report ids plain, and says once when loadgroup was applied."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.config = catalog.config
        self.auto = n_without_dist(self.config)
        self._said = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        mode = "auto" if self.auto else str(self.config.getoption("dist"))
        node.workerinput[WORKERINPUT_KEY] = mode

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from xdist.scheduler import LoadFileScheduling, LoadGroupScheduling, LoadScopeScheduling

        from pytest_benchsdk._plugin.distribution.crashes import crash_safe

        # Items without a group (those of files that need none, ordinary tests) are each
        # their own scope under loadgroup, so they spread one by one as under --dist load.
        # xdist's scope schedulers hang or run a test twice after a worker crash: these
        # do not (see .crashes).
        base = {
            "loadgroup": LoadGroupScheduling,
            "loadscope": LoadScopeScheduling,
            "loadfile": LoadFileScheduling,
        }.get("loadgroup" if self.auto else str(config.getoption("dist")))
        return None if base is None else crash_safe(base)(config, log)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Items report their plain ids; xdist's report for a crashed worker uses the id the
        # scheduler holds, with the group.
        nodeid = report.nodeid
        if "@" in nodeid:
            plain = plain_node_id(nodeid)
            if plain != nodeid:
                report.nodeid = plain

    @pytest.hookimpl(optionalhook=True, trylast=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self._said or not self.auto:
            return
        self._said = True
        grouped: dict[str, None] = {}
        for nodeid in ids:
            if "@" in nodeid and plain_node_id(nodeid) != nodeid:
                grouped[nodeid.partition("::")[0]] = None
        if not grouped:
            return
        parts = []
        for path in grouped:
            entry = self.catalog.files.get(self.catalog.file_key(self.config.rootpath / path))
            reasons = ", ".join(entry[1].grouping_reasons) if entry is not None else ""
            parts.append(f"{path} ({reasons})" if reasons else path)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                "benchsdk: -n without --dist: running with --dist loadgroup, so each "
                f"participant's items stay in one worker: {', '.join(parts)}"
            )
