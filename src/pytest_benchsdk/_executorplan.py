"""What the executor runs: :class:`IterationSpec` (one iteration) and :class:`GroupPlan` (a pool).

Private to :mod:`pytest_benchsdk.executor`, which re-exports every name here; plain data with
its validation, kept apart from the threads and the event loop that run it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs

from pytest_benchsdk.context import TaskContext

__all__ = ["GroupMode", "GroupPlan", "IterationSpec"]

GroupMode = Literal["participant", "round"]


@attrs.frozen(eq=False)
class IterationSpec:
    """One scheduled iteration (one pytest item's task run).

    * ``key`` — any hashable identifying the iteration (e.g. ``(participant_name, task_index)``);
      unique within a group; the futures returned by :meth:`Executor.start_group` use it.
    * ``participant`` — the participant object handed to the task; ``participant_name`` its name
      (used in step-timeout messages and for :class:`~pytest_benchsdk.context.LogLine` routing).
    * ``phase`` — the phase name or None; ``task_index`` — the 0-based schedule index
      (``ctx.task_index``, ``record.task_index``).
    * ``ordinal`` — position of this iteration among its group's *selected* iterations (0-based);
      the participant-mode stagger slot (``t0 + ordinal × stagger``).
    * ``invoke(ctx)`` — calls the user task with the context (returns a value or an awaitable).
    * ``is_async`` — run on the event loop (True) or on a thread (False).
    * ``args`` — custom CLI flag values (``ctx.args``).
    """

    key: Hashable
    participant: object
    participant_name: str
    phase: str | None
    task_index: int
    ordinal: int
    invoke: Callable[[TaskContext], object]
    is_async: bool
    args: Mapping[str, str] = attrs.field(factory=dict)


def _iterations_converter(value: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(item if isinstance(item, IterationSpec) else tuple(item) for item in value)


@attrs.frozen(eq=False)
class GroupPlan:
    """A set of iterations run as one pool.

    ``iterations``: participant mode — the group's specs in schedule order; round mode — a
    sequence of rounds, each a sequence of specs in declared participant order.
    ``concurrency`` (>= 1) bounds iterations in flight (within a round in round mode);
    ``stagger_delay_ms`` (>= 0) is the ramp slot (participant) or the pause between rounds.
    """

    group_id: Hashable
    mode: GroupMode
    concurrency: int
    stagger_delay_ms: float
    iterations: tuple[IterationSpec | tuple[IterationSpec, ...], ...] = attrs.field(
        converter=_iterations_converter
    )

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("participant", "round"):
            raise ValueError(f"GroupPlan.mode must be 'participant' or 'round' (got {self.mode!r})")
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ValueError(
                f"GroupPlan.concurrency must be an integer >= 1 (got {self.concurrency!r})"
            )
        if not self.stagger_delay_ms >= 0:
            raise ValueError(
                f"GroupPlan.stagger_delay_ms must be a number >= 0 (got {self.stagger_delay_ms!r})"
            )
        for item in self.iterations:
            if self.mode == "participant" and not isinstance(item, IterationSpec):
                raise TypeError("participant-mode GroupPlan.iterations must be IterationSpecs")
            if self.mode == "round" and (
                isinstance(item, IterationSpec)
                or not all(isinstance(s, IterationSpec) for s in item)
            ):
                raise TypeError("round-mode GroupPlan.iterations must be rounds (lists of specs)")
        keys = [spec.key for _, spec in self.indexed_specs()]
        if len(set(keys)) != len(keys):
            raise ValueError("GroupPlan iteration keys must be unique")

    @classmethod
    def build(
        cls,
        *,
        group_id: Hashable,
        mode: str,
        concurrency: int,
        stagger_delay_ms: float,
        iterations: Sequence[IterationSpec] | Sequence[Sequence[IterationSpec]],
    ) -> GroupPlan:
        """Like the constructor, but round mode also accepts a *flat* list of specs: they are
        grouped into rounds by ``task_index`` (ascending), keeping the given order (declared
        participant order) within each round."""
        items = list(iterations)
        if mode == "round" and items and all(isinstance(i, IterationSpec) for i in items):
            rounds: dict[int, list[IterationSpec]] = {}
            for spec in items:
                assert isinstance(spec, IterationSpec)
                rounds.setdefault(spec.task_index, []).append(spec)
            items = [tuple(rounds[index]) for index in sorted(rounds)]
        if mode not in ("participant", "round"):
            raise ValueError(f"GroupPlan.mode must be 'participant' or 'round' (got {mode!r})")
        return cls(
            group_id=group_id,
            mode="round" if mode == "round" else "participant",
            concurrency=concurrency,
            stagger_delay_ms=stagger_delay_ms,
            iterations=items,
        )

    @property
    def rounds(self) -> tuple[tuple[IterationSpec, ...], ...]:
        """The rounds (round mode); participant mode: one round holding every spec."""
        if self.mode == "round":
            return tuple(r for r in self.iterations if isinstance(r, tuple))
        return (tuple(s for s in self.iterations if isinstance(s, IterationSpec)),)

    def indexed_specs(self) -> Iterator[tuple[int, IterationSpec]]:
        """Every spec in run order with its round index (0 in participant mode)."""
        for round_index, specs in enumerate(self.rounds):
            for spec in specs:
                yield round_index, spec


# Public as pytest_benchsdk.executor.*: keep that name in the classes' reprs and pickles.
IterationSpec.__module__ = "pytest_benchsdk.executor"
GroupPlan.__module__ = "pytest_benchsdk.executor"
