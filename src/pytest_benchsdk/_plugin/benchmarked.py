"""Benchmarked tests as runs: the ``benchmark`` fixture's measurements in the one run model.

With ``--bench`` (in the controller of a session without pytest-xdist), every collected test
that uses the ``benchmark`` fixture, or carries the ``benchmark`` marker without it (pytest-
codspeed's convention: the whole body is measured), is a participant of a benchmark named
after its group: the marker's ``group=``, else its module. Each group is opened as a run like a
bench file's (:meth:`~pytest_benchsdk._session.BenchSession.open_run`, with a config made
here: one iteration per participant, scored on ``time_ms``), and each test's measurement
becomes one record (:func:`~pytest_benchsdk._engine.rounds.round_record`) attached to its call
report, where the controller keeps it as it keeps an iteration's (``pytest_runtest_logreport``):
the store, the platform, scores, warnings, thresholds, comparisons and every view follow.

A group's score is against a ceiling of twice its slowest p99 (rounded up to 1, 2 or 5 × 10ⁿ
ms), set when the session ends: scores and ranks order a group's tests, fastest first.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import attrs
import pytest

from pytest_benchsdk._config.models import Participant, define_benchmark_config
from pytest_benchsdk._engine.benchfile import BenchFile, schedule_bench_file
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.rounds import (
    TIME_KEY,
    Rounds,
    RoundSettings,
    RoundStats,
    failed_record,
    measure_rounds,
    round_record,
)
from pytest_benchsdk._engine.schedule import BenchmarkSchedule, RunArgs
from pytest_benchsdk._plugin.benchmark import (
    FIXTURE_KEY,
    BenchmarkFixture,
    marker_options,
)
from pytest_benchsdk._plugin.execution import REPORT_ATTRIBUTE
from pytest_benchsdk.results import RoundsKnobs

if TYPE_CHECKING:
    from pytest_benchsdk._plugin.catalog import Catalog
    from pytest_benchsdk.results import BenchmarkRun

__all__ = ["BenchmarkedTests", "FixtureGroup"]

#: The call report's attribute saying why a benchmarked test was not measured.
UNMEASURED_ATTRIBUTE: Final = "benchsdk_unmeasured"
#: Why a session under pytest-xdist measures no benchmarked test (pytest-benchmark's rule).
XDIST_WHY_NOT: Final = (
    "benchmarked tests (the benchmark fixture, @pytest.mark.benchmark) are not measured "
    "under pytest-xdist: processes running side by side disturb each other's timings; run "
    "them without -n (e.g. pytest --bench -p no:xdist -m benchmark)"
)
#: Where a marker-only test keeps the rounds of its body.
_BODY_KEY = pytest.StashKey[Rounds]()
#: Where a test keeps the group (run) it reports to.
_GROUP_KEY = pytest.StashKey["FixtureGroup"]()
#: The scored metric's weights (upstream's usual split).
_WEIGHTS: Final = {"median": 0.6, "p95": 0.25, "p99": 0.15}
#: The placeholder ceiling until the session end knows the group's figures.
_NO_CEILING: Final = 1.0


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug or "benchmark"


def _never_run(*_: Any) -> None:  # pragma: no cover - a group's runs never call a task
    raise AssertionError("a group of benchmarked tests has no task")


def uses_fixture(item: pytest.Item) -> bool:
    return "benchmark" in getattr(item, "fixturenames", ())


def body_benchmarked(item: pytest.Item) -> bool:
    """A marker-only test (pytest-codspeed's convention): marked, without the fixture."""
    return (
        isinstance(item, pytest.Function)
        and not uses_fixture(item)
        and item.get_closest_marker("benchmark") is not None
    )


@attrs.define
class FixtureGroup:
    """One group of benchmarked tests: its run's key, bench file and schedule, and each
    test's participant name by node id."""

    file_key: str
    bench_file: BenchFile
    schedule: BenchmarkSchedule
    participants: dict[str, str]
    #: The rounds' settings of its tests: the run's knobs.
    rounds: RoundsKnobs


def nice_ceiling(value_ms: float) -> float:
    """The smallest 1, 2 or 5 × 10ⁿ at or above ``value_ms`` (a positive number)."""
    if not value_ms > 0 or not math.isfinite(value_ms):
        return _NO_CEILING
    power = 10.0 ** math.floor(math.log10(value_ms))
    for step in (1, 2, 5, 10):
        if step * power >= value_ms:
            return float(f"{step * power:.12g}")
    return 10 * power  # pragma: no cover - the loop ends at 10


class BenchmarkedTests:
    """The ``benchmark`` fixture's measuring side (plugin ``benchsdk-benchmarked``)."""

    def __init__(self, catalog: Catalog, *, why_not: str | None = None) -> None:
        self.catalog = catalog
        self.config = catalog.config
        #: Why this session does not measure (pytest-xdist), said once.
        self.why_not = why_not
        self.groups: dict[str, FixtureGroup] = {}
        self._said_why_not = False
        #: The line about a test that set ``benchmark.group`` inside it (said once).
        self._moved_line: str | None = None

    # -- the fixture ----------------------------------------------------------------------

    def fixture_for(self, node: pytest.Item) -> BenchmarkFixture:
        if self.why_not is not None:
            return BenchmarkFixture(node, measuring=False, why_not=self.why_not)
        return BenchmarkFixture(node, measuring=True, settings=self._settings(node))

    def _settings(self, node: pytest.Item) -> RoundSettings:
        options = marker_options(node)
        options.pop("group", None)
        try:
            return RoundSettings(**options)
        except TypeError as exc:  # pragma: no cover - marker_options checked the keys
            raise pytest.UsageError(f"{node.nodeid}: @pytest.mark.benchmark: {exc}") from None

    # -- collection: the groups -------------------------------------------------------------

    def open_groups(self, items: Sequence[pytest.Item]) -> list[FixtureGroup]:
        """The groups of the selected benchmarked tests (none when this session does not
        measure)."""
        if self.why_not is not None:
            return []
        members: dict[str, list[pytest.Item]] = {}
        names: dict[str, str] = {}
        for item in items:
            if not (uses_fixture(item) or body_benchmarked(item)):
                continue
            try:
                group = marker_options(item).get("group")
            except (TypeError, ValueError):
                continue  # the test fails with it (the fixture, or its call, says why)
            module = self._module_key(item)
            key = module if group is None else f"group:{group}"
            names[key] = module if group is None else str(group)
            members.setdefault(key, []).append(item)
        for key, tests in members.items():
            self.groups[key] = group = self._group(key, names[key], tests)
            for item in tests:
                item.stash[_GROUP_KEY] = group
        return list(self.groups.values())

    def _module_key(self, item: pytest.Item) -> str:
        return self.catalog.file_key(Path(item.path))

    def _group(self, key: str, name: str, tests: list[pytest.Item]) -> FixtureGroup:
        one_module = len({self._module_key(item) for item in tests}) == 1
        participants: dict[str, str] = {}
        for item in tests:
            _, _, rest = item.nodeid.partition("::")
            participants[item.nodeid] = rest if one_module and rest else item.nodeid
        config = define_benchmark_config(
            benchmark_slug=_slug(name.removesuffix(".py")),
            benchmark_name=name,
            participants=[Participant(p) for p in participants.values()],
            iterations=1,
            scoring={
                "metrics": [
                    {"key": TIME_KEY, "unit": "ms", "ceiling": _NO_CEILING, "weights": _WEIGHTS}
                ]
            },
        )
        bench_file = BenchFile(Path(tests[0].path), config, _never_run)
        args = self.catalog.options.run_args
        own = RunArgs(run_key=args.run_key, no_ingest=args.no_ingest, thresholds=args.thresholds)
        schedule = schedule_bench_file(bench_file, own, self.catalog.environ)
        rounds = RoundsKnobs.of_settings([self._settings(item) for item in tests])
        return FixtureGroup(key, bench_file, schedule, participants, rounds)

    # -- the marker alone: the whole body, measured ------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        if self.why_not is not None or not body_benchmarked(pyfuncitem):
            return None
        function = pyfuncitem.obj
        if _is_async(function):
            # Another plugin (pytest-asyncio, anyio) runs async tests; measure nothing here.
            return None
        names = pyfuncitem._fixtureinfo.argnames
        kwargs = {name: pyfuncitem.funcargs[name] for name in names}
        pyfuncitem.stash[_BODY_KEY] = measure_rounds(
            function, (), kwargs, self._settings(pyfuncitem)
        )
        return True

    # -- the record, on the call report ------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        if (
            call.when == "call"
            and call.excinfo is not None
            and (uses_fixture(item) or body_benchmarked(item))
        ):
            _without_our_frames(call.excinfo, self.config)
        report = yield
        if call.when != "call":
            return report
        group = item.stash.get(_GROUP_KEY, None)
        if group is None:
            if self.why_not is not None and (uses_fixture(item) or body_benchmarked(item)):
                # Crosses xdist on the report, to the controller's one line.
                setattr(report, UNMEASURED_ATTRIBUTE, self.why_not)
            return report
        fixture = item.stash.get(FIXTURE_KEY, None)
        moved = fixture.moved_group() if fixture is not None else None
        if moved is not None:
            self._group_set_in_test(item, moved, group)
        rounds = fixture.rounds if fixture is not None else item.stash.get(_BODY_KEY, None)
        extra = _json_safe(fixture.extra_info) if fixture is not None else None
        if report.failed:
            # Its failure is a record too (the function raised, or the test after it): the
            # run fails with it, and every view says which test and why.
            record = failed_record(rounds, _failure_text(call), call.start, call.stop, extra)
        elif rounds is None:
            return report  # skipped, or it never called the fixture
        else:
            record = round_record(rounds, RoundStats.of(rounds), extra)
        payload = RecordPayload.of_record(group.file_key, group.participants[item.nodeid], record)
        setattr(report, REPORT_ATTRIBUTE, payload.to_json())
        controller = self.config.pluginmanager.get_plugin("benchsdk-controller")
        if controller is not None:
            controller.remember_local(report, payload)
        return report

    def _group_set_in_test(self, item: pytest.Item, wanted: str, group: FixtureGroup) -> None:
        """``benchmark.group = "x"`` inside a test: the group (a run, opened at collection
        with its tests as participants, in the store and on the platform) is decided by then,
        so the test stays in its own; said once (at the end), with the way that works."""
        if self._moved_line is None:
            self._moved_line = (
                f"benchsdk: {item.nodeid} sets benchmark.group = {wanted!r} inside the test, "
                "which cannot move it: a group of benchmarked tests is decided at collection, "
                f"from the marker; use @pytest.mark.benchmark(group={wanted!r}) on the test (or "
                "pytestmark on its module). Its result is in the group "
                f"{group.bench_file.config.benchmark_name!r}."
            )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        # At the end, once (not in the progress line of the test that set it).
        if self._moved_line is not None:
            terminalreporter.write_line(self._moved_line, yellow=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        why_not = getattr(report, UNMEASURED_ATTRIBUTE, None)
        if why_not is None or self._said_why_not or hasattr(self.config, "workerinput"):
            return
        self._said_why_not = True
        self._say(f"benchsdk: {why_not}")

    def _say(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(line, yellow=True)

    # -- the session end: each group's ceiling -----------------------------------------------

    def failed_thresholds(self, runs: Mapping[str, BenchmarkRun]) -> list[str]:
        """A line for each threshold a benchmarked test failed (``--bench-threshold``): the
        session fails with them, as with a bench file's failed threshold items."""
        lines: list[str] = []
        for key in self.groups:
            run = runs.get(key)
            summary = run.summary if run is not None else None
            if summary is None:
                continue
            lines.extend(
                f"threshold failed: {summary.benchmark_slug}: {verdict.message()}"
                for verdict in summary.thresholds
                if verdict.outcome == "failed"
            )
        return lines

    def set_ceilings(self, runs: Mapping[str, BenchmarkRun]) -> None:
        """Each group's scoring, settled when its figures are known: the ceiling is twice its
        slowest p99 of ``time_ms``, nicely rounded; the participants are ordered by their
        median ``time_ms``, fastest first. Scores have two decimals (upstream's), so the tests
        of a group whose slowest is thousands of times slower than the rest all score 100.00,
        and a tie keeps the participants' order: that order must then be the speed order."""
        from pytest_benchsdk._analysis.stats import compute_stats

        for key in self.groups:
            run = runs.get(key)
            if run is None:
                continue
            slowest = 0.0
            medians: dict[str, float] = {}
            for name, samples in run.samples.items():
                values = samples.metric(TIME_KEY)
                if values:
                    stats = compute_stats(values)
                    slowest = max(slowest, stats.p99)
                    medians[name] = stats.median
            ceiling = nice_ceiling(2 * slowest)
            config = run.schedule.config
            assert config.scoring is not None
            metric = attrs.evolve(config.scoring.metrics[0], ceiling=ceiling)
            scoring = attrs.evolve(config.scoring, metrics=(metric,))
            run.schedule = attrs.evolve(run.schedule, config=attrs.evolve(config, scoring=scoring))
            # Unmeasured tests (failed, skipped) after the measured ones, in collection order.
            run.order_participants(functools.partial(_median_of, medians))


def _median_of(medians: Mapping[str, float], name: str) -> float:
    return medians.get(name, math.inf)


def _is_async(function: object) -> bool:
    import inspect

    return inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)


#: This package's directory: its frames are the measuring machinery, not the user's code.
_PACKAGE_DIR: Final = Path(__file__).resolve().parent.parent


def _without_our_frames(excinfo: pytest.ExceptionInfo[BaseException], config: Any) -> None:
    """A benchmarked test's traceback as its own code raised it: the fixture's and the
    rounds' frames between the test and its function are unlinked from the traceback
    (``--full-trace`` keeps them). pytest rebuilds what it shows from the raw traceback, so
    the chain itself is relinked (``tb_next`` is writable)."""
    if config.getoption("fulltrace", False):
        return
    frames = []
    tb: TracebackType | None = excinfo.tb
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kept = [
        frame
        for frame in frames
        if _PACKAGE_DIR not in Path(frame.tb_frame.f_code.co_filename).resolve().parents
    ]
    if not kept or len(kept) == len(frames) or kept[0] is not frames[0]:
        return
    for frame, following in zip(kept, [*kept[1:], None], strict=True):
        frame.tb_next = following
    excinfo.traceback = type(excinfo.traceback)(kept[0])


def _failure_text(call: pytest.CallInfo[None]) -> str:
    """The test's error in one line (``RuntimeError: boom``); the traceback is pytest's."""
    text = call.excinfo.exconly().strip() if call.excinfo is not None else ""
    return text.splitlines()[0] if text else "the test failed"


def _json_safe(value: dict[str, Any]) -> dict[str, Any] | None:
    """``extra_info`` as JSON holds it (what JSON cannot, as its ``str``)."""
    if not value:
        return None
    loaded: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return loaded
