"""Items as views over a scheduled run: turn bench items into executor groups and run them.

The plans and the running are the engine's (:mod:`pytest_benchsdk._engine.plans`, shared with the
programmatic runs); this module finds a group's items and calls the task with their fixtures.

The first item of a group to reach its call phase decides how the group runs: with
concurrency 1 every item runs its own iteration inside its own call (so function-scoped
fixtures work); otherwise the whole group starts in the background and each item waits for
its own iteration's outcome.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, cast

import pytest

from pytest_benchsdk._engine.benchfile import BenchIteration
from pytest_benchsdk._engine.context import IterationOutcome, TaskContext
from pytest_benchsdk._engine.executor import Executor, GroupPlan
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.plans import CONTEXT_FIXTURES, context_value, plan_group, run_planned
from pytest_benchsdk._engine.schedule import BenchmarkSchedule
from pytest_benchsdk._plugin.runtime.catalog import Catalog
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import ParticipantSamples

__all__ = ["ProcessRuntime"]

_RUNTIME_KEY = pytest.StashKey["ProcessRuntime"]()


def _iteration_of(item: pytest.Item) -> BenchIteration | None:
    iteration = getattr(item, "bench", None)
    return iteration if isinstance(iteration, BenchIteration) else None


class _TaskCall:
    """Calls the user's task with its fixtures and one iteration's context (a spec's
    ``invoke``).

    ``item`` is the iteration's own item: its request is the task's ``request`` (in a group
    started by another item, that item's fixtures serve everyone, but ``request.node`` must
    still be this iteration's). ``values`` are those shared fixture values (grouped: copied
    from the trigger now, as pytest clears an item's funcargs at its teardown while the group
    may still run), or None to read the item's own fixtures at call time (inline). A slotted
    object rather than closures: a plan holds one per iteration of the group.
    """

    __slots__ = ("argnames", "item", "task", "values")

    def __init__(
        self,
        task: Callable[..., Any],
        argnames: tuple[str, ...],
        values: Mapping[str, Any] | None,
        item: pytest.Function,
    ) -> None:
        self.task = task
        self.argnames = argnames
        self.values = values
        self.item = item

    def bind(self, ctx: TaskContext) -> Callable[[], object]:
        """The task with its arguments for ``ctx``, found now: the executor calls this before
        the iteration's clock starts and times only the call it returns."""
        values = self.item.funcargs if self.values is None else self.values
        kwargs = {
            name: context_value(ctx, name)
            if name in CONTEXT_FIXTURES
            else self.item._request
            if name == "request"
            else values[name]
            for name in self.argnames
        }
        return partial(self.task, **kwargs)

    def __call__(self, ctx: TaskContext) -> object:
        return self.bind(ctx)()


class JudgedIterations:
    """A participant's iterations in this process, for its threshold items: their samples,
    and the records (scored metrics and ``score`` thresholds are judged as scoring takes
    them; only benchmarks with thresholds keep them)."""

    def __init__(self) -> None:
        self.samples = ParticipantSamples()
        self.records: list[TaskRecord] = []

    def add(self, record: TaskRecord) -> None:
        self.samples.add(record)
        self.records.append(record)


class ProcessRuntime:
    """This process's executor plus the group plans built from its selected items."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.executor = Executor()
        self._plans: dict[str, GroupPlan] = {}
        # Each group's selected items, found in one pass over the session's items when the
        # first group starts (a pass per group would cost groups x items: 10,000 participants
        # of one iteration each, 10^8 item visits).
        self._members: dict[str, list[tuple[pytest.Function, BenchIteration]]] | None = None
        # (file key, participant) -> what its threshold items judge (files with thresholds).
        self._judged: dict[tuple[str, str], JudgedIterations] = {}

    @classmethod
    def of(cls, config: pytest.Config) -> ProcessRuntime:
        runtime = config.stash.get(_RUNTIME_KEY, None)
        if runtime is None:
            runtime = config.stash[_RUNTIME_KEY] = cls(config)
        return runtime

    @classmethod
    def started(cls, config: pytest.Config) -> ProcessRuntime | None:
        """The runtime, if any item of this process ran."""
        return config.stash.get(_RUNTIME_KEY, None)

    def shutdown(self) -> list[str]:
        """Cancel what still runs and stop the executor; what was abandoned, one line each
        (see :meth:`Executor.shutdown`; the leaked threads are ``executor.abandoned_threads``)."""
        self.executor.cancel_all()
        return self.executor.shutdown()

    def unreported(self) -> list[RecordPayload]:
        """Outcomes of iterations that finished in the background but whose items never ran
        their call phase (the session stopped early)."""
        leftovers: list[RecordPayload] = []
        for group_id in self._plans:
            # Reported iterations were released: what is left never reached its item.
            for key, future in self.executor.futures(group_id).items():
                if not future.done() or future.cancelled():
                    continue
                if future.exception() is None:
                    file_key, participant, _ = cast("tuple[str, str, int]", key)
                    leftovers.append(RecordPayload.of(file_key, participant, future.result()))
        return leftovers

    def run_item(self, item: pytest.Function, schedule: BenchmarkSchedule) -> IterationOutcome:
        """Run (or wait for) the iteration of ``item``, whose file has ``schedule``."""
        iteration = _iteration_of(item)
        assert iteration is not None
        plan = self._plan_for(item, iteration, schedule)
        # The item reports the outcome from here on: the executor keeps nothing of it.
        outcome = run_planned(self.executor, plan, iteration.key)
        self.judge(iteration, schedule, outcome.record)
        return outcome

    def judge(
        self, iteration: BenchIteration, schedule: BenchmarkSchedule, record: TaskRecord
    ) -> None:
        """Keep what ``iteration`` measured for its participant's thresholds (if it has any)."""
        if schedule.thresholds and not iteration.slot.warmup:
            key = (iteration.file_key, iteration.participant.name)
            judged = self._judged.get(key)
            if judged is None:
                judged = self._judged[key] = JudgedIterations()
            judged.add(record)

    def judged(self, file_key: str, participant: str) -> JudgedIterations | None:
        """What the participant's iterations in this process measured, for its thresholds."""
        return self._judged.get((file_key, participant))

    def _plan_for(
        self, trigger: pytest.Function, iteration: BenchIteration, schedule: BenchmarkSchedule
    ) -> GroupPlan:
        group_id = iteration.group_id
        plan = self._plans.get(group_id)
        if plan is not None:
            return plan
        if self._members is None:
            self._members = {}
            for item in trigger.session.items:
                member = _iteration_of(item)
                if member is not None and item.get_closest_marker("skip") is None:
                    group = self._members.setdefault(member.group_id, [])
                    group.append((cast("pytest.Function", item), member))
        # A group's members are needed once: its plan keeps them from here on.
        members = self._members.pop(group_id, [])
        inline = schedule.resolved.concurrency == 1
        is_async = inspect.iscoroutinefunction(trigger.obj)
        argnames = tuple(trigger._fixtureinfo.argnames)
        # Inline: each item's own fixtures (set up by now). Grouped: the trigger's fixtures,
        # which are all wider than function scope (checked at collection).
        shared = None if inline else dict(trigger.funcargs)
        plan = plan_group(
            group_id,
            schedule.resolved,
            [(member, _TaskCall(trigger.obj, argnames, shared, item)) for item, member in members],
            is_async=is_async,
            link=Catalog.of(self.config).link,
        )
        self._plans[group_id] = plan
        return plan
