"""Benchmarked tests as runs: the ``benchmark`` fixture's measurements in the one run model.

With ``--bench``, every collected test that uses the ``benchmark`` fixture, or carries the
``benchmark`` marker without it (pytest-codspeed's convention: the whole body is measured), is
a participant of a benchmark named after its group: ``benchmark.group`` as the test leaves it
(set inside the test, as pytest-benchmark suites do), else the marker's ``group=``, else its
module. A test's group is
known for sure only when it reports, so a group's run opens with its first test's report
(:meth:`~pytest_benchsdk._session.BenchSession.add_participant`, with a config made here: one
iteration per participant, scored on ``time_ms``) and each later test joins it as it reports;
a test that never reports (skipped in its setup, not run) joins the group it was collected
into at the session end, and a group no test reported to never opens. Each test's measurement
becomes one record (:func:`~pytest_benchsdk._engine.rounds.round_record`) attached to its call
report, where the controller keeps it as it keeps an iteration's (``pytest_runtest_logreport``):
the store, the platform, scores, warnings, thresholds, comparisons and every view follow.

Under pytest-xdist the workers collect and measure (as pytest-codspeed does; pytest-benchmark
measures nothing there): a worker's report carries its test's group (:data:`GROUP_ATTRIBUTE`:
the group's key, name and module, the test's name, its rounds' settings, why it was skipped)
beside the record, and the controller opens or joins the group from it before it keeps the
record. A wall-time group measured so says, in its notes, that its tests shared the machine
with the other workers' (:func:`side_by_side_note`); a count does not mind the neighbours.

A group's score is against a ceiling of twice its slowest p99 (rounded up to 1, 2 or 5 × 10ⁿ
ms), set when the session ends: scores and ranks order a group's tests, fastest first.
"""

from __future__ import annotations

import collections
import functools
import math
import re
from collections.abc import Callable, Generator, Mapping, Sequence
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
from pytest_benchsdk._plugin.benchmark.fixture import (
    FIXTURE_KEY,
    RECORD_KEY,
    BenchmarkFixture,
    body_benchmarked,
    install_measuring,
    is_async,
    json_safe,
    marker_options,
    uses_fixture,
)
from pytest_benchsdk._plugin.items.execution import REPORT_ATTRIBUTE
from pytest_benchsdk.results import RoundsKnobs

if TYPE_CHECKING:
    from pytest_benchsdk._plugin.runtime.catalog import Catalog
    from pytest_benchsdk._session import BenchSession
    from pytest_benchsdk.results import BenchmarkRun

__all__ = ["BenchmarkedTests", "FixtureGroup"]

#: The report attribute that carries a benchmarked test's group from an xdist worker to the
#: controller (``{key, label, path, name, rounds, skipped}``), which declares it from there.
GROUP_ATTRIBUTE: Final = "benchsdk_benchmarked"


def side_by_side_note(workers: int) -> str:
    """The note of a wall-time group measured in ``workers`` pytest-xdist workers."""
    many = f"{workers} pytest-xdist workers" if workers > 1 else "a pytest-xdist worker"
    return (
        f"Measured in {many} side by side: the times include the neighbours' load; for "
        "times that do not, run -n 0 (pytest --bench -n 0 -m benchmark) or count "
        "instructions (--bench-instructions)"
    )


#: Where a marker-only test keeps the rounds of its body.
_BODY_KEY = pytest.StashKey[Rounds]()
#: Where a test keeps the group it was collected into: its key and name, and its own
#: participant name there.
_COLLECTED_KEY = pytest.StashKey["tuple[str, str, str]"]()
#: Where a test skipped in its setup keeps why (it joins its group at the session end).
_SKIPPED_KEY = pytest.StashKey[str]()
#: The scored metric's weights (upstream's usual split).
_WEIGHTS: Final = {"median": 0.6, "p95": 0.25, "p99": 0.15}
#: The placeholder ceiling until the session end knows the group's figures.
_NO_CEILING: Final = 1.0


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug or "benchmark"


def _never_run(*_: Any) -> None:  # pragma: no cover - a group's runs never call a task
    raise AssertionError("a group of benchmarked tests has no task")


@attrs.define
class FixtureGroup:
    """One group of benchmarked tests, as far as its tests have reported: its run's key and
    name, the bench file and schedule its run opened with (declaring its first test; the run
    declares the others as they join), each test's participant name by node id, and the
    distinct rounds' settings of its tests."""

    file_key: str
    name: str
    bench_file: BenchFile
    schedule: BenchmarkSchedule
    participants: dict[str, str] = attrs.Factory(dict)
    settings: list[RoundsKnobs] = attrs.Factory(list)

    @classmethod
    def first(
        cls,
        key: str,
        name: str,
        path: Path,
        participant: str,
        catalog: Catalog,
        *,
        note: str | None = None,
    ) -> FixtureGroup:
        """A group opened by its first test (``path``: its module): its bench file, with one
        iteration per participant, scored on ``time_ms``; ``note``, a line of its schedule's
        notes (the header's, the stored run's)."""
        config = define_benchmark_config(
            benchmark_slug=_slug(name.removesuffix(".py")),
            benchmark_name=name,
            participants=[Participant(participant)],
            iterations=1,
            scoring={
                "metrics": [
                    {"key": TIME_KEY, "unit": "ms", "ceiling": _NO_CEILING, "weights": _WEIGHTS}
                ]
            },
        )
        bench_file = BenchFile(path, config, _never_run)
        args = catalog.options.run_args
        own = RunArgs(run_key=args.run_key, no_ingest=args.no_ingest, thresholds=args.thresholds)
        schedule = schedule_bench_file(bench_file, own, catalog.environ)
        if note is not None:
            schedule = attrs.evolve(schedule, warnings=(*schedule.warnings, note))
        return cls(key, name, bench_file, schedule)

    @property
    def rounds(self) -> RoundsKnobs:
        """The rounds' settings of its tests (each test's, as knobs): the run's knobs."""
        return RoundsKnobs.of_settings(self.settings)

    def name_for(self, nodeid: str, wanted: str) -> str:
        """``wanted`` unless another test of the group has it, else the node id."""
        taken = set(self.participants.values())
        for name in (wanted, nodeid, f"{nodeid} ({wanted})"):
            if name not in taken:
                return name
        return nodeid  # pragma: no cover - the last candidate is unique


def nice_ceiling(value_ms: float) -> float:
    """The smallest 1, 2 or 5 × 10ⁿ at or above ``value_ms`` (a positive number)."""
    if not value_ms > 0 or not math.isfinite(value_ms):
        return _NO_CEILING
    power = 10.0 ** math.floor(math.log10(value_ms))
    for step in (1, 2, 5, 10):
        if step * power >= value_ms:
            return float(f"{step * power:.12g}")
    return 10 * power  # pragma: no cover - the loop ends at 10


@attrs.frozen
class Membership:
    """A test's place in its group: the group's ``key`` and ``label`` (its name), the module
    it was first collected from (``path``), the test's ``nodeid`` and ``name`` there, its
    rounds' settings, and why it was skipped (None: it ran). Crosses from an xdist worker to
    the controller on the test's report (:data:`GROUP_ATTRIBUTE`)."""

    key: str
    label: str
    path: Path
    nodeid: str
    name: str
    rounds: RoundsKnobs
    skipped: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "path": str(self.path),
            "nodeid": self.nodeid,
            "name": self.name,
            "rounds": self.rounds.to_json(),
            "skipped": self.skipped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Membership:
        skipped = data.get("skipped")
        return cls(
            str(data["key"]),
            str(data["label"]),
            Path(str(data["path"])),
            str(data["nodeid"]),
            str(data["name"]),
            RoundsKnobs.from_json(data.get("rounds")) or RoundsKnobs(),
            None if skipped is None else str(skipped),
        )


class BenchmarkedTests:
    """The ``benchmark`` fixture's measuring side (plugin ``benchsdk-benchmarked``)."""

    def __init__(
        self, catalog: Catalog, *, in_worker: bool = False, side_by_side: str | None = None
    ) -> None:
        self.catalog = catalog
        self.config = catalog.config
        install_measuring(self.config, self)
        #: This process is an xdist worker: it collects and measures, its reports carry each
        #: test's group to the controller (:data:`GROUP_ATTRIBUTE`).
        self.in_worker = in_worker
        #: The note of each group measured under pytest-xdist (:func:`side_by_side_note`).
        self.side_by_side = side_by_side
        #: The groups tests reported to (each a run), by key.
        self.groups: dict[str, FixtureGroup] = {}
        #: The selected benchmarked tests, and the node ids of those that joined a group.
        self.tests: list[pytest.Item] = []
        self._joined: set[str] = set()
        # Its per-test report hooks are a plugin of their own, registered now (where this
        # one is: A/B's report wrapper, registered later, must stay around them) and taken
        # out once collection selected no test with the fixture or the marker: in a session
        # of bench files alone they ran on every item's three reports for nothing (~10 µs an
        # item).
        #: The controller's bench session and its record keeper, where this process owns the
        #: runs (:meth:`attach`); a worker or an A/B side process has none.
        self._session: BenchSession | None = None
        self._remember_local: Callable[[pytest.TestReport, RecordPayload], None] | None = None
        self._reports: _Reports | None = _Reports(self)
        self.config.pluginmanager.register(self._reports, "benchsdk-benchmarked-reports")

    def _unplug_reports(self) -> None:
        if self._reports is not None:
            self.config.pluginmanager.unregister(self._reports)
            self._reports = None

    def attach(
        self,
        session: BenchSession,
        remember_local: Callable[[pytest.TestReport, RecordPayload], None],
    ) -> None:
        """The runs' owner (the controller): a group's run is declared in ``session`` as its
        tests join, and a report's record is handed to ``remember_local``."""
        self._session = session
        self._remember_local = remember_local

    # -- the fixture ----------------------------------------------------------------------

    def fixture_for(self, node: pytest.Item) -> BenchmarkFixture:
        fixture = BenchmarkFixture(node, measuring=True, settings=self._settings(node))
        fixture.cprofile = self.catalog.options.cprofile
        return fixture

    def _settings(self, node: pytest.Item) -> RoundSettings:
        """The test's rounds settings: its marker's keys, over the session's
        (``--bench-rounds-*``, pytest-benchmark's and pytest-codspeed's options)."""
        options = marker_options(node)
        options.pop("group", None)
        try:
            return RoundSettings(**{**self.catalog.options.round_defaults, **options})
        except TypeError as exc:  # pragma: no cover - marker_options checked the keys
            raise pytest.UsageError(f"{node.nodeid}: @pytest.mark.benchmark: {exc}") from None

    # -- the groups ---------------------------------------------------------------------------

    def collect_groups(self, items: Sequence[pytest.Item]) -> int:
        """Note the group each selected benchmarked test is collected into (the marker's
        ``group=``, else its module) and its participant name there: its node id after the
        module, or the whole node id when another test of the group has the same. Returns how
        many tests there are."""
        members: dict[str, list[pytest.Item]] = {}
        names: dict[str, str] = {}
        benchmarked = False
        for item in items:
            if not (uses_fixture(item) or body_benchmarked(item)):
                continue
            benchmarked = True
            try:
                group = marker_options(item).get("group")
            except (TypeError, ValueError):
                continue  # the test fails with it (the fixture, or its call, says why)
            key, names[key] = self._group_key(item, None if group is None else str(group))
            members.setdefault(key, []).append(item)
        for key, tests in members.items():
            shared = collections.Counter(_short_name(item) for item in tests)
            for item in tests:
                short = _short_name(item)
                name = short if shared[short] == 1 else item.nodeid
                item.stash[_COLLECTED_KEY] = (key, names[key], name)
                self.tests.append(item)
        if not benchmarked:
            self._unplug_reports()
        return len(self.tests)

    def _group_key(self, item: pytest.Item, group: str | None) -> tuple[str, str]:
        """The key and the name of a test's group: a named group, else its module; with
        ``--benchmark-group-by`` other than ``group``, pytest-benchmark's key of the test."""
        spec = self.catalog.options.group_by_tests
        if spec != "group":
            label = _grouping(item, group, spec)
            return f"by:{label}", label
        if group is None:
            module = self.catalog.file_key(Path(item.path))
            return module, module
        return f"group:{group}", group

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # An xdist worker's groups (the controller notes its own when its collection ends).
        if self.in_worker:
            self.collect_groups(session.items)

    def _join(
        self, item: pytest.Item, fixture: BenchmarkFixture | None, *, skipped: str | None = None
    ) -> Membership:
        """The test reports: its group (``benchmark.group`` as the test left it, else the
        one it was collected into) opens its run with it, or it joins that run, under
        ``benchmark.name`` if the test set it. Returns its place there, its name as declared.
        ``skipped``: why the test was skipped (``skipif``, ``pytest.skip``): it joins with
        nothing planned, listed as skipped, as a bench file's participant without its
        environment variables."""
        key, label, name = item.stash[_COLLECTED_KEY]
        if fixture is not None:
            group_set, name_set = fixture.reported_as(item)
            moved_key, label = self._group_key(item, group_set)
            if name_set is not None:
                name = name_set
            elif moved_key != key:
                name = _short_name(item)
            key = moved_key
        rounds = RoundsKnobs.of_settings([self._settings(item)])
        wanted = Membership(key, label, Path(item.path), item.nodeid, name, rounds, skipped)
        return attrs.evolve(wanted, name=self._declare(wanted))

    def _declare(self, test: Membership) -> str:
        """``test`` joins its group (opened with it when it is the first), under its name,
        or its node id where another test of the group has that name (returned); in the
        store too, where this process owns the runs."""
        key, nodeid, skipped = test.key, test.nodeid, test.skipped
        group = self.groups.get(key)
        if group is not None and nodeid in group.participants:
            return group.participants[nodeid]  # reported again (a rerun plugin)
        if group is None:
            group = FixtureGroup.first(
                key, test.label, test.path, test.name, self.catalog, note=self.side_by_side
            )
            self.groups[key] = group
        name = group.name_for(nodeid, test.name)
        group.participants[nodeid] = name
        if test.rounds not in group.settings:
            group.settings.append(test.rounds)
        self._joined.add(nodeid)
        if self._session is not None:
            self._session.add_participant(
                key,
                group.bench_file,
                group.schedule,
                name,
                set() if skipped is not None else {0},
                # --bench-threshold judges every benchmarked test (no items of their own).
                thresholds=list(group.schedule.thresholds),
                knobs=group.rounds.as_knobs(),
                skipped=skipped,
            )
        return name

    def close_groups(self) -> None:
        """The session ends: a test that never reported (skipped in its setup, not run)
        joins the group it was collected into, unmeasured: one skipped in its setup
        (``skipif``, ``pytest.skip`` in a fixture) as skipped, one that never ran (``-x``,
        an interruption) as planned."""
        for item in self.tests:
            if item.nodeid not in self._joined:
                self._join(item, None, skipped=item.stash.get(_SKIPPED_KEY, None))

    # -- the marker alone: the whole body, measured ------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        if not body_benchmarked(pyfuncitem):
            return None
        function = pyfuncitem.obj
        if is_async(function):
            # Another plugin (pytest-asyncio, anyio) runs async tests; measure nothing here.
            return None
        names = pyfuncitem._fixtureinfo.argnames
        kwargs = {name: pyfuncitem.funcargs[name] for name in names}
        pyfuncitem.stash[_BODY_KEY] = measure_rounds(
            function, (), kwargs, self._settings(pyfuncitem)
        )
        return True

    # -- the record, on the call report ------------------------------------------------------

    def runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """``pytest_runtest_makereport`` (a wrapper) of :class:`_Reports`."""
        if (
            call.when == "call"
            and call.excinfo is not None
            and (uses_fixture(item) or body_benchmarked(item))
        ):
            _without_our_frames(call.excinfo, self.config)
        report = yield
        if call.when != "call":
            if call.when == "setup" and _COLLECTED_KEY in item.stash:
                why = _skip_reason(report)
                if why is not None:
                    item.stash[_SKIPPED_KEY] = why
                    if self.in_worker:
                        # The controller lists it as skipped (its call never reports).
                        self._carry(report, self._join(item, None, skipped=why))
            return report
        if _COLLECTED_KEY not in item.stash:
            return report
        fixture = item.stash.get(FIXTURE_KEY, None)
        rounds = fixture.rounds if fixture is not None else item.stash.get(_BODY_KEY, None)
        elsewhere = item.stash.get(RECORD_KEY, None)
        # A test that skipped itself before it measured anything (pytest.skip) is skipped,
        # not a planned test that left no record.
        skipped = _skip_reason(report) if rounds is None and elsewhere is None else None
        # Its group as the test left it (and its run, open before the record is kept).
        test = self._join(item, fixture, skipped=skipped)
        if self.in_worker:
            self._carry(report, test)
        file_key, participant = test.key, test.name
        extra = json_safe(fixture.extra_info) if fixture is not None else None
        if elsewhere is not None:
            record = elsewhere
        elif report.failed:
            # Its failure is a record too (the function raised, or the test after it): the
            # run fails with it, and every view says which test and why.
            record = failed_record(rounds, _failure_text(call), call.start, call.stop, extra)
        elif rounds is None:
            return report  # skipped, or it never called the fixture
        else:
            identity = _identity(item, file_key, self._settings(item))
            if fixture is not None and fixture.cprofile_rows is not None:
                identity["cprofile"] = fixture.cprofile_rows
            record = round_record(rounds, RoundStats.of(rounds), extra, identity)
        payload = RecordPayload.of_record(file_key, participant, record)
        setattr(report, REPORT_ATTRIBUTE, payload.to_json())
        if self._remember_local is not None:
            self._remember_local(report, payload)
        return report

    @staticmethod
    def _carry(report: pytest.TestReport, test: Membership) -> None:
        setattr(report, GROUP_ATTRIBUTE, test.to_json())

    def runtest_logreport(self, report: pytest.TestReport) -> None:
        """``pytest_runtest_logreport`` of :class:`_Reports`: in the controller, a test an
        xdist worker measured (or skipped) joins its group before its record is kept, under
        the name the controller gives it (its record's participant too)."""
        data = getattr(report, GROUP_ATTRIBUTE, None)
        if data is None or self._session is None:
            return
        test = Membership.from_json(data)
        name = self._declare(test)
        payload = getattr(report, REPORT_ATTRIBUTE, None)
        if isinstance(payload, dict) and payload.get("participant") != name:
            # Another worker's test took the name first (benchmark.name set alike).
            payload["participant"] = name

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


def _identity(item: pytest.Item, group_key: str, settings: RoundSettings) -> dict[str, Any]:
    """The test as pytest-benchmark's JSON names it: ``fullname`` (its node id), ``name``,
    ``group`` (a named group, else None), ``param``/``params`` (a parametrized test's id and
    values, JSON-safe) and ``options`` (its rounds' settings, the timer by its name)."""
    callspec = getattr(item, "callspec", None)
    params = json_safe(callspec.params) if callspec is not None else None
    timer = settings.timer
    return {
        "fullname": item.nodeid,
        "name": item.name,
        "group": group_key.removeprefix("group:") if group_key.startswith("group:") else None,
        "param": callspec.id if callspec is not None else None,
        "params": params if params is not None or callspec is None else {},
        "options": {
            "disable_gc": settings.disable_gc,
            "timer": getattr(timer, "__name__", str(timer)),
            "min_rounds": settings.min_rounds,
            "max_time": settings.max_time,
            "min_time": settings.min_time,
            "warmup": settings.warmup,
        },
    }


def _grouping(item: pytest.Item, group: str | None, spec: str) -> str:
    """pytest-benchmark's ``pytest_benchmark_group_stats`` key of a test for
    ``--benchmark-group-by`` (``group``, ``name``, ``fullname``, ``func``, ``fullfunc``,
    ``param``, ``param:NAME``, comma-separated), its parts joined by spaces; a test with no
    part (no group, no param) is grouped under its module."""
    callspec = getattr(item, "callspec", None)
    parts: list[str] = []
    for grouping in spec.split(","):
        if grouping == "group":
            part = group
        elif grouping == "name":
            part = item.name
        elif grouping == "func":
            part = item.name.split("[")[0]
        elif grouping == "fullname":
            part = item.nodeid
        elif grouping == "fullfunc":
            part = item.nodeid.split("[")[0]
        elif grouping == "param":
            part = callspec.id if callspec is not None else None
        else:
            name = grouping.removeprefix("param:")
            params = callspec.params if callspec is not None else {}
            part = f"{name}={params[name]}" if name in params else None
        if part:
            parts.append(str(part))
    return " ".join(parts) or item.nodeid.split("::")[0]


def _skip_reason(report: pytest.TestReport) -> str | None:
    """Why a report says its test was skipped (``skipif``'s reason, ``pytest.skip``'s
    message), or None when it was not (an expected failure is not a skip)."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return None
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    text = text.strip().removeprefix("Skipped:").strip()
    return text or "no reason given"


def _short_name(item: pytest.Item) -> str:
    """A test's node id after its module (``test_x[p]``, ``TestC::test_x``)."""
    _, _, rest = item.nodeid.partition("::")
    return rest or item.nodeid


def _median_of(medians: Mapping[str, float], name: str) -> float:
    return medians.get(name, math.inf)


#: This package's directory: its frames are the measuring machinery, not the user's code.
_PACKAGE_DIR: Final = Path(__file__).resolve().parents[2]


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


class _Reports:
    """The per-test report hooks of :class:`BenchmarkedTests` (see its ``__init__``)."""

    def __init__(self, tests: BenchmarkedTests) -> None:
        self.tests = tests

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        return (yield from self.tests.runtest_makereport(item, call))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Before the controller keeps the report's record: its run must be open then.
        self.tests.runtest_logreport(report)
