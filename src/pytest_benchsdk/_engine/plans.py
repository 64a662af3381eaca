"""A bench file's iterations as executor groups: their identities, their plans, running one.

The one home of what both paths do with a schedule: the pytest glue (items are views over a
scheduled run, :mod:`pytest_benchsdk._plugin.runtime.process`) and the programmatic runs
(:mod:`pytest_benchsdk.runner`) list the same
:class:`~pytest_benchsdk._engine.benchfile.BenchIteration` s with the same group ids
(:func:`bench_iterations`), build the same
:class:`~pytest_benchsdk.executor.GroupPlan` s (:func:`plan_group`) and run an iteration the
same way (:func:`run_planned`). The task's context parameters (``participant``, ``step`` …)
are mapped onto the iteration's :class:`~pytest_benchsdk.context.TaskContext` by one table,
:data:`CONTEXT_FIXTURES` (pytest's fixtures of the same names serve everything else).
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk._engine.benchfile import BenchIteration, BenchSetupError
from pytest_benchsdk._engine.context import IterationOutcome, TaskContext
from pytest_benchsdk._engine.executor import Executor, GroupPlan, IterationSpec
from pytest_benchsdk._engine.schedule import (
    BenchmarkSchedule,
    ResolvedRunConfig,
    SkippedParticipant,
)

__all__ = [
    "CONTEXT_FIXTURES",
    "ContextCall",
    "CoordinationSource",
    "bench_iterations",
    "context_call",
    "context_value",
    "executor_pools",
    "plan_group",
    "run_planned",
]

#: A task parameter (a pytest fixture of the same name) → its value in the iteration's context.
CONTEXT_FIXTURES: Mapping[str, Callable[[TaskContext], Any]] = {
    "participant": lambda ctx: ctx.participant,
    "phase": lambda ctx: ctx.phase,
    "task_index": lambda ctx: ctx.task_index,
    "step": lambda ctx: ctx.step,
    "measure": lambda ctx: ctx.measure,
    "log": lambda ctx: ctx.log,
    "bench": lambda ctx: ctx,
}


def context_value(ctx: TaskContext, name: str) -> Any:
    """The value of the per-iteration parameter ``name`` for the iteration of ``ctx``."""
    return CONTEXT_FIXTURES[name](ctx)


def executor_pools(schedule: BenchmarkSchedule) -> dict[tuple[str | None, bool], str]:
    """The executor pool of each (phase, warm-up?) of a participant (of a file in round mode),
    as a suffix of its group id.

    Each phase's warm-up is a pool of its own, run right before that phase. The measured
    iterations are one pool across phases (upstream's ramp) up to a phase with warm-up of its
    own: that warm-up runs after the phases before it, so the measured pool starts again
    after it (``::2`` from the second phase on, say)."""
    pools: dict[tuple[str | None, bool], str] = {}
    measured = ""
    for position, entry in enumerate(schedule.warmup_plan):
        if entry.count and position > 0:
            measured = f"::{position + 1}"
        pools[entry.phase, False] = measured
        pools[entry.phase, True] = f"::warmup::{position + 1}"
    return pools


def bench_iterations(
    file_key: str, schedule: BenchmarkSchedule, args: Mapping[str, str]
) -> list[tuple[BenchIteration, SkippedParticipant | None]]:
    """Every iteration of the schedule in run order (:meth:`BenchmarkSchedule.items`), with
    its group id (``<file key>::<participant>`` or ``::round``, plus its pool) and the skip
    reason of an env-skipped participant."""
    by_name = {p.name: p for p in schedule.file_config.participants}
    round_mode = schedule.resolved.group_by == "round"
    pools = executor_pools(schedule)
    iterations: list[tuple[BenchIteration, SkippedParticipant | None]] = []
    # One string per group, shared by its iterations (not one per iteration).
    group_ids: dict[tuple[str, str], str] = {}
    for name, slot, skipped in schedule.items():
        unit = "round" if round_mode else name
        pool = pools.get((slot.phase, slot.warmup), "::warmup" if slot.warmup else "")
        group_id = group_ids.get((unit, pool))
        if group_id is None:
            group_id = group_ids[unit, pool] = f"{file_key}::{unit}{pool}"
        iteration = BenchIteration(
            file_key=file_key,
            participant=by_name[name],
            slot=slot,
            group_id=group_id,
            args=args,
        )
        iterations.append((iteration, skipped))
    return iterations


class CoordinationSource(Protocol):
    """Who hands out a participant's step coordination (the platform link, while reporting)."""

    def coordination(
        self, file_key: str, participant: str, concurrency: int
    ) -> StepCoordination | None: ...


def plan_group(
    group_id: Hashable,
    resolved: ResolvedRunConfig,
    members: Sequence[tuple[BenchIteration, Callable[[TaskContext], object]]],
    *,
    is_async: bool,
    link: CoordinationSource | None = None,
) -> GroupPlan:
    """The executor's plan of one group: its selected ``members`` (each with the call that
    runs the task for it) in run order, with the run's knobs. ``link`` gives each participant
    its step coordination."""
    per_participant = Counter(member.participant.name for member, _ in members)
    specs: list[IterationSpec] = []
    for ordinal, (member, invoke) in enumerate(members):
        name = member.participant.name
        specs.append(
            IterationSpec(
                key=member.key,
                participant=member.participant,
                participant_name=name,
                phase=member.slot.phase,
                task_index=member.slot.index,
                ordinal=ordinal,
                invoke=invoke,
                is_async=is_async,
                args=member.args,
                coordination=None
                if link is None
                else link.coordination(
                    member.file_key,
                    name,
                    # A target no iteration count of this process can reach would hold a
                    # readiness barrier until it times out.
                    min(resolved.concurrency, per_participant[name]),
                ),
            )
        )
    return GroupPlan.build(
        group_id=group_id,
        mode=resolved.group_by,
        concurrency=resolved.concurrency,
        stagger_delay_ms=resolved.stagger_delay_ms,
        iterations=specs,
    )


def run_planned(executor: Executor, plan: GroupPlan, key: Hashable) -> IterationOutcome:
    """Run (or wait for) one iteration of ``plan``: with concurrency 1 in the caller's thread,
    one after another; otherwise the whole group starts in the background and this waits for
    the iteration's outcome. The caller has the outcome from here on (the executor keeps
    nothing of it)."""
    if plan.concurrency == 1:
        return executor.run_inline(plan, key, release=True)
    outcome = executor.start_group(plan)[key].result()
    executor.release(plan.group_id, key)
    return outcome


class ContextCall:
    """Calls a task with its context parameters (:data:`CONTEXT_FIXTURES`) for one iteration
    (an :class:`~pytest_benchsdk.executor.IterationSpec`'s ``invoke``), or, for a task of one
    other parameter, with the whole context (``def task(ctx)``)."""

    __slots__ = ("argnames", "positional", "task")

    def __init__(
        self, task: Callable[..., Any], argnames: tuple[str, ...], *, positional: bool = False
    ) -> None:
        self.task = task
        self.argnames = argnames
        self.positional = positional

    def bind(self, ctx: TaskContext) -> Callable[[], object]:
        """The task with its arguments for ``ctx`` (found before the iteration's clock starts)."""
        if self.positional:
            return partial(self.task, ctx)
        return partial(self.task, **{name: context_value(ctx, name) for name in self.argnames})

    def __call__(self, ctx: TaskContext) -> object:
        return self.bind(ctx)()


def context_call(task: Callable[..., Any], where: str) -> ContextCall:
    """The call of a task outside pytest: each parameter must be one of the context's
    (``participant``, ``phase``, ``task_index``, ``step``, ``measure``, ``log``, ``bench``) or
    have a default; a task of exactly one other parameter gets the whole context. Anything
    else only pytest provides (a fixture): :class:`BenchSetupError` naming ``where``."""
    try:
        parameters = list(inspect.signature(task).parameters.values())
    except (TypeError, ValueError):
        return ContextCall(task, ())
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = [p for p in parameters if p.kind in kinds]
    wanted = [p.name for p in named if p.name in CONTEXT_FIXTURES]
    others = [p.name for p in named if p.name not in CONTEXT_FIXTURES and p.default is p.empty]
    if len(named) == 1 and others and named[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
        return ContextCall(task, (), positional=True)
    if others:
        known = ", ".join(CONTEXT_FIXTURES)
        raise BenchSetupError(
            f"{where}: the task asks for {', '.join(repr(n) for n in others)}, which only "
            f"pytest provides (a fixture); outside pytest a task takes {known} (or one "
            "parameter: the whole context). Run it with pytest --bench, or give those "
            "parameters defaults."
        )
    return ContextCall(task, tuple(wanted))
