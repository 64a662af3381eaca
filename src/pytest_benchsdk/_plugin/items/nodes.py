"""The pytest node classes of bench files: a bench module and its iteration items."""

from __future__ import annotations

import contextlib
import inspect
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from _pytest._code.code import ExceptionInfo, TerminalRepr
from _pytest.outcomes import OutcomeException

from pytest_benchsdk._config.models import BenchmarkConfigError
from pytest_benchsdk._engine.benchfile import (
    BenchFile,
    BenchIteration,
    BenchSetupError,
    is_test_module,
    item_name,
    load_bench_file,
)
from pytest_benchsdk._engine.context import IterationOutcome, is_task_error
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.plans import CONTEXT_FIXTURES, bench_iterations
from pytest_benchsdk._engine.schedule import BenchmarkSchedule
from pytest_benchsdk._plugin.distribution.loadgroup import LoadgroupNodeId, group_name
from pytest_benchsdk._plugin.distribution.scheduling import grouping_problem
from pytest_benchsdk._plugin.items.thresholds import threshold_items
from pytest_benchsdk._plugin.runtime.catalog import Catalog
from pytest_benchsdk._plugin.runtime.heap import FrozenHeap
from pytest_benchsdk._plugin.runtime.process import ProcessRuntime
from pytest_benchsdk._views.escape import message_text

__all__ = ["BenchItem", "BenchModule", "ItemFailure", "ItemRunner", "install_item_runner"]


class ItemFailure(Exception):
    """An item's failure whose text says it all (no traceback of this process): raised by an
    :class:`ItemRunner` whose iteration failed elsewhere (an A/B side's process)."""


class ItemRunner(Protocol):
    """Runs a bench item's iteration in place of this process's executor: the slot a feature
    (A/B) installs with :func:`install_item_runner`. Returns the record the item reports and,
    when the iteration failed, the text of its failure."""

    def run_item(self, item: BenchItem) -> tuple[RecordPayload, str | None]: ...


_ITEM_RUNNER_KEY = pytest.StashKey[ItemRunner]()


def install_item_runner(config: pytest.Config, runner: ItemRunner) -> None:
    """Every bench item of the session runs through ``runner`` (see :class:`ItemRunner`)."""
    config.stash[_ITEM_RUNNER_KEY] = runner


def _ends_a_program(error: BaseException) -> bool:
    """``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit`` and the like from a task: not
    an ``Exception``, and none of pytest's own outcomes (``skip``, ``fail``, ``exit`` …)."""
    return not isinstance(error, (Exception, OutcomeException))


class TaskExit(Exception):
    """A task raised a ``KeyboardInterrupt``, ``SystemExit`` or ``GeneratorExit`` of its own:
    its iteration failed, and that is all. Re-raised as it is, the first would stop pytest's
    session (as if Ctrl-C had been pressed) and the others would show pytest's and the
    executor's frames; the item fails with one line instead."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
        self.error = error

    def line(self, rootpath: Path) -> str:
        """``FILE:LINE: the task raised NAME: MESSAGE (...)``, where the task raised it."""
        where = ""
        frames = traceback.extract_tb(self.error.__traceback__)
        if frames:
            last = frames[-1]
            path = Path(last.filename)
            with contextlib.suppress(ValueError):
                path = path.relative_to(rootpath)
            where = f"{path}:{last.lineno}: "
        name = type(self.error).__name__
        return message_text(
            f"{where}the task raised {self}: its iteration failed (a task's own {name} fails "
            "only its iteration; it does not stop the session)"
        )


class BenchModule(pytest.Module):
    """A bench file. Imports like a test module (so conftest fixtures, import modes and
    module-level fixtures work) but yields benchmark items instead of test functions.

    ``task_location`` caches where the task is defined, which every item of the file reports.
    ``bench_items`` are all its items as collected, before any selection;
    ``bench_round_mode`` says whether they run round by round (``group_by="round"``);
    ``bench_file_key`` is the file's key in the catalog.

    A module that ``bench_files`` matched but that is no bench file (:func:`is_test_module`:
    no config, nothing imported of this plugin) is a test module: it is collected as pytest
    collects one (its ``test_*`` functions and classes) when pytest would collect it
    (``python_files`` or named on the command line; ``python_collects``), else not at all.
    Deciding needs the module imported, which happens once, here.
    """

    task_location: tuple[Path, int | None] | None = None
    bench_items: tuple[pytest.Item, ...] = ()
    bench_round_mode: bool = False
    bench_file_key: str = ""
    #: Whether pytest's python plugin would have collected this file as a test module.
    python_collects: bool = True
    #: Set by :meth:`collect`: the module is an ordinary test module, not a bench file.
    test_module: bool = False

    def _getobj(self) -> Any:
        try:
            return super()._getobj()  # type: ignore[no-untyped-call]
        except BenchmarkConfigError as exc:
            raise self.CollectError(f"{self.path}: {exc}") from None

    def load(self) -> BenchFile:
        """The module's exports (imports it; raises ``BenchSetupError``)."""
        return load_bench_file(self.path, self.obj)

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        if is_test_module(self.obj):
            self.test_module = True
            return super().collect() if self.python_collects else []
        self.session._fixturemanager.parsefactories(self)
        catalog = Catalog.of(self.config)
        try:
            bench_file = self.load()
            schedule = catalog.add(self.path, bench_file)
        except BenchSetupError as exc:
            raise self.CollectError(str(exc)) from None
        problem = grouping_problem(self.config, self.path, schedule)
        if problem is not None:
            raise self.CollectError(problem)
        heap = FrozenHeap.of(self.config)
        with heap.making_items() if heap is not None else contextlib.nullcontext():
            items = list(self._items(catalog, bench_file, schedule))
        # Every item, before --lf, -k and the rest choose: completing the selection
        # (warm-up, the iterations a threshold judges) adds from here.
        self.bench_items = tuple(items)
        self.bench_round_mode = schedule.resolved.group_by == "round"
        self.bench_file_key = catalog.file_key(self.path)
        return items

    def _items(
        self, catalog: Catalog, bench_file: BenchFile, schedule: BenchmarkSchedule
    ) -> Iterator[pytest.Item]:
        """The iteration items in run order, each participant's threshold items right after
        its last iteration (round mode: after all of them)."""
        items = list(self._iteration_items(catalog, bench_file, schedule))
        if not schedule.thresholds:
            yield from items
            return
        last: dict[str, int] = {}
        for position, item in enumerate(items):
            last[item.bench.participant.name] = position
        round_mode = schedule.resolved.group_by == "round"
        after: dict[int, list[pytest.Item]] = {}
        skipped = {s.name: s for s in schedule.skipped}
        for name, position in last.items():
            made = threshold_items(self, items[position], schedule.thresholds, skipped.get(name))
            after.setdefault(len(items) - 1 if round_mode else position, []).extend(made)
        for position, item in enumerate(items):
            yield item
            yield from after.get(position, ())

    def _iteration_items(
        self, catalog: Catalog, bench_file: BenchFile, schedule: BenchmarkSchedule
    ) -> Iterator[BenchItem]:
        file_key = catalog.file_key(self.path)
        args = catalog.custom_args_for(bench_file.config)
        concurrency = schedule.resolved.concurrency
        # xdist_group is pytest-xdist's marker: apply it only where xdist registered it, so
        # --strict-markers runs without xdist (-p no:xdist, or not installed) collect.
        xdist = self.config.pluginmanager.hasplugin("xdist")
        fixtureinfo = None  # the same task in the same module: compute it once, not per item
        # Marks are made once per file or group (pytest.mark.<name> looks the name up in the
        # registered markers on every access), not per item.
        bench_mark = pytest.mark.bench
        group_marks: dict[str, pytest.MarkDecorator] = {}
        round_mode = schedule.resolved.group_by == "round"
        for iteration, skipped in bench_iterations(file_key, schedule, args):
            name, slot = iteration.participant.name, iteration.slot
            unit = "round" if round_mode else name
            keywords = {name: True, **({slot.phase: True} if slot.phase else {})}
            if slot.warmup:
                keywords["warmup"] = True
            item = BenchItem.from_parent(
                self,
                name=item_name(name, slot),
                callobj=bench_file.task,
                keywords=keywords,
                fixtureinfo=fixtureinfo,
            )
            if fixtureinfo is None:  # the same for every item: checked once, at collection
                self._check_fixtures_exist(item, bench_file)
            fixtureinfo = item._fixtureinfo
            item.bench = iteration
            item.add_marker(bench_mark)
            if xdist:
                # One xdist group per participant (per file in round mode): its warm-up,
                # iterations and thresholds stay on one worker.
                group_mark = group_marks.get(unit)
                if group_mark is None:
                    group_mark = group_marks[unit] = pytest.mark.xdist_group(
                        name=group_name(file_key, unit)
                    )
                item.add_marker(group_mark)
            if skipped is not None:
                item.add_marker(pytest.mark.skip(reason=skipped.reason))
            elif concurrency > 1:
                self._check_fixture_scopes(item, concurrency)
            yield item

    def _check_fixtures_exist(self, item: BenchItem, bench_file: BenchFile) -> None:
        """A task parameter (or a fixture's) that no fixture provides fails the file's
        collection once, naming the task and the fixture, instead of every iteration's
        setup with pytest's whole list of fixtures (issue 48, item 7)."""
        defs = item._fixtureinfo.name2fixturedefs
        missing = [n for n in item.fixturenames if n != "request" and not defs.get(n)]
        if not missing:
            return
        task = bench_file.task
        name = getattr(task, "__name__", "task")
        try:
            line = f" (line {inspect.getsourcelines(task)[1]})"
        except (OSError, TypeError):
            line = ""
        own = set(item._fixtureinfo.argnames)
        lines = []
        for fixture in missing:
            if fixture in own:
                lines.append(f"its parameter '{fixture}' is not a fixture")
                continue
            askers = [
                f"'{other}'"
                for other, found in defs.items()
                if found and fixture in found[-1].argnames
            ]
            lines.append(
                f"'{fixture}', which the fixture {' and '.join(askers) or 'it uses'} "
                "asks for, is not a fixture"
            )
        context = ", ".join(CONTEXT_FIXTURES)
        raise self.CollectError(
            f"{self.path}: the task '{name}'{line}: " + "; ".join(lines) + ".\n"
            f"A task's parameters are pytest fixtures: the iteration's own ({context}), "
            "or one defined with @pytest.fixture in a conftest.py, in the bench file "
            "or by a plugin. Define "
            + ", ".join(f"'{f}'" for f in missing)
            + " there, or remove the parameter."
        )

    def _check_fixture_scopes(self, item: BenchItem, concurrency: int) -> None:
        defs = item._fixtureinfo.name2fixturedefs
        for name in item.fixturenames:
            if name in CONTEXT_FIXTURES or name == "request" or not defs.get(name):
                continue
            if defs[name][-1].scope == "function":
                raise self.CollectError(
                    f"{self.path}: the task uses the function-scoped fixture '{name}', but "
                    f"concurrency {concurrency} runs several iterations at once, so it cannot "
                    f"be set up per iteration. Give '{name}' a wider scope (e.g. "
                    f'scope="module") or run with --bench-concurrency 1.'
                )


class BenchItem(LoadgroupNodeId, pytest.Function):
    """One iteration of one participant. Runs through the process's executor.

    ``bench`` says which iteration; ``bench_outcome`` is set by :meth:`runtest` until the
    runner has attached its record to the call report.
    """

    # Slots, not the instance dict: one more key there grows every item's dict by ~0.7 KiB
    # (a resize), for the whole session.
    __slots__ = ("bench", "bench_outcome")

    bench: BenchIteration
    #: The iteration's outcome; an A/B session's side B hands its record over ready-made.
    bench_outcome: IterationOutcome | RecordPayload | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bench_outcome = None
        self._structure_id()

    def runtest(self) -> None:
        catalog = Catalog.of(self.config)
        _, schedule = catalog.files[self.bench.file_key]
        if catalog.link is not None:
            refused = catalog.link.admit(self.bench.file_key, self.bench.participant.name)
            if refused is not None:
                pytest.skip(refused)
        runner = self.config.stash.get(_ITEM_RUNNER_KEY, None)
        if runner is not None:
            payload, failure = runner.run_item(self)
            self.bench_outcome = payload
            ProcessRuntime.of(self.config).judge(self.bench, schedule, payload.record)
            if failure is not None:
                raise ItemFailure(failure)
            return
        outcome = ProcessRuntime.of(self.config).run_item(self, schedule)
        error = outcome.error
        # pytest.skip() inside a task keeps pytest's meaning: the iteration is skipped and
        # leaves no record (like a participant skipped for missing env vars); every other
        # exception, BaseExceptions included, fails the item and keeps its error record.
        self.bench_outcome = None if isinstance(error, pytest.skip.Exception) else outcome
        if error is not None:
            if _ends_a_program(error):
                raise TaskExit(error) from None
            raise error

    def repr_failure(  # type: ignore[override]
        self, excinfo: ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, ItemFailure):
            return message_text(excinfo.value)
        if isinstance(excinfo.value, TaskExit):
            return excinfo.value.line(self.config.rootpath)
        if is_task_error(excinfo.value):
            # A TaskError is the task's own verdict: show it as upstream prints it, with its
            # control characters escaped (a code or message may carry terminal sequences).
            return message_text(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # Every item of a file shares the task's location; finding it is costly per item.
        module = self.parent
        assert isinstance(module, BenchModule)
        cached = module.task_location
        if cached is None:
            path, lineno, _ = super().reportinfo()
            cached = (Path(path), lineno)
            module.task_location = cached
        return cached[0], cached[1], self.name
