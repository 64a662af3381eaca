"""Collection: bench files become one pytest item per participant x schedule slot."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from _pytest._code.code import ExceptionInfo, TerminalRepr

from .config import BenchmarkConfig, BenchmarkConfigError, Participant, define_benchmark_config
from .context import is_task_error
from .schedule import (
    BenchmarkPlan,
    RunArgs,
    Slot,
    UnknownParticipantError,
    UnknownShapeError,
    plan_benchmark,
)

__all__ = [
    "CONTEXT_FIXTURES",
    "BenchFile",
    "BenchItem",
    "BenchModule",
    "BenchSetupError",
    "is_bench_path",
    "item_name",
    "load_bench_file",
]

#: Fixtures the plugin provides per iteration; they never block concurrent execution.
CONTEXT_FIXTURES = frozenset(
    {"participant", "phase", "task_index", "step", "measure", "log", "bench", "request"}
)


class BenchSetupError(Exception):
    """A bench file cannot be turned into items (bad exports, shape, providers...)."""


def is_bench_path(path: Path, patterns: Iterable[str]) -> bool:
    """Whether ``path`` matches one of the ``bench_files`` globs (basename or full path)."""
    for pattern in patterns:
        target = str(path) if "/" in pattern or "\\" in pattern else path.name
        if fnmatch.fnmatch(target, pattern) or (
            "/" in pattern and fnmatch.fnmatch(str(path), f"*/{pattern}")
        ):
            return True
    return False


def item_name(participant: str, slot: Slot) -> str:
    """``task[<participant>-<phase>-<task_index>]`` (no phase part without phases)."""
    parts = [participant] + ([slot.phase] if slot.phase is not None else []) + [str(slot.index)]
    return f"task[{'-'.join(parts)}]"


@attrs.frozen
class BenchFile:
    """A bench module's exports: its validated config and its task callable."""

    path: Path
    config: BenchmarkConfig
    task: Callable[..., Any]


def load_bench_file(path: Path, module: object) -> BenchFile:
    """Read ``config`` and ``task`` (or ``default``) from an imported bench module."""
    config = getattr(module, "config", None)
    # A BenchmarkConfig built directly (not through define_benchmark_config) is validated and
    # normalized here too; a valid one comes back equal.
    if isinstance(config, (Mapping, BenchmarkConfig)):
        try:
            config = define_benchmark_config(config)
        except BenchmarkConfigError as exc:
            raise BenchSetupError(f"{path}: {exc}") from None
    if not isinstance(config, BenchmarkConfig):
        raise BenchSetupError(
            f"{path} must export a `config` created with define_benchmark_config "
            "(with participants)."
        )
    task = getattr(module, "task", None)
    if task is None:
        task = getattr(module, "default", None)
    if not callable(task):
        raise BenchSetupError(f"{path} must export a `task` created with define_task.")
    return BenchFile(path=path, config=config, task=task)


def plan_for(bench_file: BenchFile, args: RunArgs, environ: Mapping[str, str]) -> BenchmarkPlan:
    """The file's plan; ``--bench-provider`` names this file does not declare are ignored here
    (the session checks that every name is declared by at least one collected file)."""
    providers = args.providers
    if providers is not None:
        declared = {p.name for p in bench_file.config.participants}
        providers = tuple(n for n in providers if n in declared)
    try:
        return plan_benchmark(bench_file.config, args, environ, providers=providers)
    except (UnknownShapeError, UnknownParticipantError, ValueError) as exc:
        raise BenchSetupError(f"{bench_file.path}: {exc}") from None


class BenchModule(pytest.Module):
    """A bench file. Imports like a test module (so conftest fixtures, import modes and
    module-level fixtures work) but yields benchmark items instead of test functions."""

    def _getobj(self) -> Any:
        try:
            return super()._getobj()  # type: ignore[no-untyped-call]
        except BenchmarkConfigError as exc:
            raise self.CollectError(f"{self.path}: {exc}") from None

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        from ._session import BenchSession  # the session layer registers plans it collects

        self.session._fixturemanager.parsefactories(self)
        session = BenchSession.of(self.config)
        try:
            bench_file = load_bench_file(self.path, self.obj)
            plan = session.register_plan(self.path, bench_file)
        except BenchSetupError as exc:
            raise self.CollectError(str(exc)) from None
        return list(self._items(session.file_key(self.path), bench_file, plan, session))

    def _items(
        self, file_key: str, bench_file: BenchFile, plan: BenchmarkPlan, session: Any
    ) -> Iterator[BenchItem]:
        by_name = {p.name: p for p in plan.file_config.participants}
        concurrency = plan.resolved.concurrency
        if concurrency > 1:
            self._check_distribution(concurrency)
        fixtureinfo = None  # the same task in the same module: compute it once, not per item
        for name, slot, skipped in plan.items():
            group_id = f"{file_key}::{'round' if plan.resolved.group_by == 'round' else name}"
            keywords = {name: True, **({slot.phase: True} if slot.phase else {})}
            item = BenchItem.from_parent(
                self,
                name=item_name(name, slot),
                callobj=bench_file.task,
                keywords=keywords,
                fixtureinfo=fixtureinfo,
            )
            fixtureinfo = item._fixtureinfo
            item.bench = _ItemInfo(
                file_key=file_key,
                participant=by_name[name],
                slot=slot,
                group_id=group_id,
                args=session.custom_args_for(bench_file.config),
            )
            item.add_marker(pytest.mark.bench)
            item.add_marker(pytest.mark.xdist_group(name=group_id))
            if skipped is not None:
                item.add_marker(pytest.mark.skip(reason=skipped.reason))
            elif concurrency > 1:
                self._check_fixture_scopes(item, concurrency)
            yield item

    def _check_distribution(self, concurrency: int) -> None:
        # xdist resets --dist to "no" on its workers but records whether it was loadgroup.
        if getattr(self.config, "workerinput", None) is None:
            return
        if not getattr(self.config.option, "loadgroup", False):
            raise self.CollectError(
                f"{self.path}: concurrency {concurrency} runs a participant's iterations "
                "together, so they must stay on one xdist worker: run with --dist loadgroup, "
                "or use --bench-concurrency 1."
            )

    def _check_fixture_scopes(self, item: BenchItem, concurrency: int) -> None:
        defs = item._fixtureinfo.name2fixturedefs
        for name in item.fixturenames:
            if name in CONTEXT_FIXTURES or not defs.get(name):
                continue
            if defs[name][-1].scope == "function":
                raise self.CollectError(
                    f"{self.path}: the task uses the function-scoped fixture '{name}', but "
                    f"concurrency {concurrency} runs several iterations at once, so it cannot "
                    f"be set up per iteration. Give '{name}' a wider scope (e.g. "
                    f'scope="module") or run with --bench-concurrency 1.'
                )


@attrs.frozen
class _ItemInfo:
    file_key: str
    participant: Participant
    slot: Slot
    group_id: str
    args: Mapping[str, str]

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.file_key, self.participant.name, self.slot.index)


class BenchItem(pytest.Function):
    """One iteration of one participant. Runs through the process's executor."""

    bench: _ItemInfo

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # pytest >= 9.2 keeps structured node ids and builds a Function's from its callspec;
        # re-parsing "task[p1-0]" gives ours the same shape as a parametrized test's, which is
        # what --lf, --deselect and the cache compare against.
        node_id = getattr(self, "_id", None)
        parse = getattr(type(node_id), "parse", None)
        if callable(parse):
            self._id = parse(str(node_id))

    # pytest-xdist's --dist loadgroup tags items by assigning ``item._nodeid``, which pytest
    # >= 9.2 no longer reads (it keeps ``_id``). Routing the assignment keeps each group on one
    # worker there too; on older pytest this is simply where the node id lives.
    @property
    def _nodeid(self) -> str:
        node_id = getattr(self, "_id", None)
        if node_id is not None:
            return str(node_id)
        value: str = self.__dict__["_bench_nodeid"]
        return value

    @_nodeid.setter
    def _nodeid(self, value: str) -> None:
        node_id = getattr(self, "_id", None)
        parse = getattr(type(node_id), "parse", None)
        if callable(parse):
            self._id = parse(value)
        else:
            self.__dict__["_bench_nodeid"] = value

    def runtest(self) -> None:
        from ._running import ProcessRuntime

        outcome = ProcessRuntime.of(self.config).run_item(self)
        self.bench_outcome = outcome
        if outcome.error is not None:
            raise outcome.error

    def repr_failure(  # type: ignore[override]
        self, excinfo: ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        if is_task_error(excinfo.value):
            # A TaskError is the task's own verdict: show it as upstream prints it.
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # Every item of a file shares the task's location; finding it is costly per item.
        cached: tuple[Path, int | None] | None = getattr(self.parent, "_bench_location", None)
        if cached is None:
            path, lineno, _ = super().reportinfo()
            cached = (Path(path), lineno)
            self.parent._bench_location = cached  # type: ignore[union-attr]
        return cached[0], cached[1], self.name
