"""Items as views over a scheduled run: turn bench items into executor groups and run them.

The first item of a group to reach its call phase decides how the group runs: with
concurrency 1 every item runs its own iteration inside its own call (so function-scoped
fixtures work); otherwise the whole group starts in the background and each item waits for
its own iteration's outcome.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest

from ._collect import CONTEXT_FIXTURES, BenchItem
from ._session import BenchSession, RecordPayload
from .context import IterationOutcome, TaskContext
from .executor import Executor, GroupPlan, IterationSpec

__all__ = ["ProcessRuntime"]

_RUNTIME_KEY = pytest.StashKey["ProcessRuntime"]()


def _context_value(ctx: TaskContext, name: str) -> Any:
    if name == "participant":
        return ctx.participant
    if name == "phase":
        return ctx.phase
    if name == "task_index":
        return ctx.task_index
    if name == "bench":
        return ctx
    return getattr(ctx, name)


def _make_invoke(
    task: Callable[..., Any], argnames: tuple[str, ...], funcargs: Callable[[], Mapping[str, Any]]
) -> Callable[[TaskContext], object]:
    """A closure calling the user's task with its fixtures and this iteration's context."""

    def invoke(ctx: TaskContext) -> object:
        values = funcargs()
        kwargs = {
            name: _context_value(ctx, name) if name in CONTEXT_FIXTURES else values[name]
            for name in argnames
        }
        return task(**kwargs)

    return invoke


def _funcargs_of(item: BenchItem, *, snapshot: bool) -> Callable[[], Mapping[str, Any]]:
    """Fixture values for ``invoke``: read at call time (inline), or copied now (grouped —
    pytest clears an item's funcargs at its teardown, while the group may still be running)."""
    if snapshot:
        values = dict(item.funcargs)
        return lambda: values
    return lambda: item.funcargs


class ProcessRuntime:
    """This process's executor plus the group plans built from its selected items."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.executor = Executor()
        self._plans: dict[str, GroupPlan] = {}
        self._reported: set[Any] = set()

    @classmethod
    def of(cls, config: pytest.Config) -> ProcessRuntime:
        runtime = config.stash.get(_RUNTIME_KEY, None)
        if runtime is None:
            runtime = config.stash[_RUNTIME_KEY] = cls(config)
        return runtime

    @classmethod
    def shutdown_if_started(cls, config: pytest.Config) -> None:
        runtime = config.stash.get(_RUNTIME_KEY, None)
        if runtime is not None:
            runtime.executor.cancel_all()
            runtime.executor.shutdown()

    @classmethod
    def unreported(cls, config: pytest.Config) -> list[RecordPayload]:
        """Outcomes of iterations that finished in the background but whose items never ran
        their call phase (the session stopped early)."""
        runtime = config.stash.get(_RUNTIME_KEY, None)
        if runtime is None:
            return []
        leftovers: list[RecordPayload] = []
        for group_id in runtime._plans:
            for key, future in runtime.executor.futures(group_id).items():
                if key in runtime._reported or not future.done() or future.cancelled():
                    continue
                if future.exception() is None:
                    file_key, participant, _ = cast("tuple[str, str, int]", key)
                    leftovers.append(RecordPayload.of(file_key, participant, future.result()))
        return leftovers

    def run_item(self, item: BenchItem) -> IterationOutcome:
        plan = self._plan_for(item)
        if plan.concurrency == 1:
            outcome = self.executor.run_inline(plan, item.bench.key)
        else:
            outcome = self.executor.start_group(plan)[item.bench.key].result()
        self._reported.add(item.bench.key)
        return outcome

    def _plan_for(self, trigger: BenchItem) -> GroupPlan:
        group_id = trigger.bench.group_id
        plan = self._plans.get(group_id)
        if plan is not None:
            return plan
        members = [
            item
            for item in trigger.session.items
            if isinstance(item, BenchItem)
            and item.bench.group_id == group_id
            and item.get_closest_marker("skip") is None
        ]
        file_key = trigger.bench.file_key
        _, bench_plan = BenchSession.of(self.config).bench_files[file_key]
        resolved = bench_plan.resolved
        inline = resolved.concurrency == 1
        is_async = inspect.iscoroutinefunction(trigger.obj)
        argnames = tuple(trigger._fixtureinfo.argnames)
        shared = _funcargs_of(trigger, snapshot=True)
        specs: list[IterationSpec] = []
        for ordinal, item in enumerate(members):
            item_funcargs = _funcargs_of(item, snapshot=False)
            # Inline: each item's own fixtures (set up by now). Grouped: the trigger's fixtures,
            # which are all wider than function scope (checked at collection).
            specs.append(
                IterationSpec(
                    key=item.bench.key,
                    participant=item.bench.participant,
                    participant_name=item.bench.participant.name,
                    phase=item.bench.slot.phase,
                    task_index=item.bench.slot.index,
                    ordinal=ordinal,
                    invoke=_make_invoke(trigger.obj, argnames, item_funcargs if inline else shared),
                    is_async=is_async,
                    args=item.bench.args,
                )
            )
        iterations: list[Any] = list(specs)
        if resolved.group_by == "round":
            rounds: dict[int, list[IterationSpec]] = {}
            for spec in specs:
                rounds.setdefault(spec.task_index, []).append(spec)
            iterations = [rounds[index] for index in sorted(rounds)]
        plan = GroupPlan(
            group_id=group_id,
            mode="round" if resolved.group_by == "round" else "participant",
            concurrency=resolved.concurrency,
            stagger_delay_ms=resolved.stagger_delay_ms,
            iterations=iterations,
        )
        self._plans[group_id] = plan
        return plan
