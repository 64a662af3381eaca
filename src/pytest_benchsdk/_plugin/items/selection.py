"""Completing pytest's selection of bench items, after every selector has chosen.

Node ids, ``-k``, ``-m``, ``--deselect``, ``--lf``, ``--ff`` and ``--sw`` choose items one by
one; a benchmark's items depend on each other. Once they have chosen (the start of
``pytest_collection_finish``), the selection is completed by these rules:

* **warm-up**: a phase's warm-up items run whenever one of that phase's measured items of the
  participant runs (without phases: any of the participant's), also for an IDE run of one item
  or ``--lf``. A participant's warm-up items of phases with nothing selected are left out (``-k
  warm`` matches ``warmup[p1-cold-0]`` too, but the cold phase is not running). Warm-up items
  selected on their own (``-k warmup``) run as chosen.
* **thresholds**: a threshold item runs with all of its participant's iterations (it judges
  them); under ``--lf``, an iteration that runs again brings its participant's threshold items.
* **order**: a participant's items (a file's, in round mode) run together and in their
  collected order (warm-up, iterations, thresholds), where the first of them was chosen to run:
  ``--ff`` moves a participant with a failure to the front, never a threshold before the
  iterations it judges.

Everything here is about items of :class:`~.nodes.BenchModule` files; other items keep their
place.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import attrs
import pytest

from pytest_benchsdk._engine.benchfile import BenchIteration
from pytest_benchsdk._plugin.items.nodes import BenchModule
from pytest_benchsdk._plugin.items.thresholds import ThresholdItem

__all__ = ["Completion", "complete_selection"]


@attrs.frozen
class Completion:
    """What completing the selection did: the items in run order, how many were added and
    why, and the warm-up items it left out."""

    items: list[pytest.Item]
    added: tuple[pytest.Item, ...] = ()
    added_warmup: int = 0
    added_iterations: int = 0
    added_thresholds: int = 0
    removed_warmup: tuple[pytest.Item, ...] = ()

    def summary(self) -> str | None:
        """One line for the header, or None when nothing changed."""
        parts = []
        if self.added_warmup:
            parts.append(f"{self.added_warmup} warm-up item(s) (they run before their phase)")
        if self.added_thresholds:
            parts.append(
                f"{self.added_thresholds} threshold item(s) (--lf runs iterations they judge)"
            )
        if self.added_iterations:
            parts.append(f"{self.added_iterations} iteration(s) (a selected threshold judges them)")
        lines = []
        if parts:
            lines.append(f"also running {', '.join(parts)}")
        if self.removed_warmup:
            lines.append(
                f"leaving out {len(self.removed_warmup)} warm-up item(s) of phases not selected"
            )
        return f"benchsdk: {'; '.join(lines)}" if lines else None


def _participant_of(item: pytest.Item) -> str | None:
    bench = getattr(item, "bench", None)
    if isinstance(bench, BenchIteration):
        return bench.participant.name
    if isinstance(item, ThresholdItem):
        return item.participant
    return None


def _unit_of(item: pytest.Item, round_mode: bool) -> Hashable:
    """The run unit an item belongs to: its participant's items, or the file's in round mode."""
    return (id(item.parent), None if round_mode else _participant_of(item))


def complete_selection(items: Sequence[pytest.Item], *, last_failed: bool) -> Completion:
    """``items`` (pytest's selection, in its order) completed and ordered by the rules above;
    ``last_failed``: the session runs ``--lf``."""
    chosen = {id(item) for item in items}
    modules: dict[int, BenchModule] = {}
    for item in items:
        parent = item.parent
        if isinstance(parent, BenchModule) and _participant_of(item) is not None:
            modules.setdefault(id(parent), parent)
    if not modules:
        return Completion(list(items))
    counts = [0, 0, 0]
    removed: list[pytest.Item] = []
    for module in modules.values():
        added, left_out = _complete_module(module, chosen, last_failed)
        counts = [total + more for total, more in zip(counts, added, strict=True)]
        removed.extend(left_out)
    ordered = _in_units(items, chosen, modules)
    originally = {id(item) for item in items}
    return Completion(
        ordered,
        added=tuple(item for item in ordered if id(item) not in originally),
        added_warmup=counts[0],
        added_iterations=counts[1],
        added_thresholds=counts[2],
        removed_warmup=tuple(removed),
    )


def _complete_module(
    module: BenchModule, chosen: set[int], last_failed: bool
) -> tuple[tuple[int, int, int], list[pytest.Item]]:
    """Apply the rules to one file's items (``chosen`` is updated); returns how many warm-up,
    iteration and threshold items were added, and the warm-up items left out."""
    measured: dict[str, list[pytest.Item]] = {}
    warmups: dict[tuple[str, str | None], list[pytest.Item]] = {}
    thresholds: dict[str, list[pytest.Item]] = {}
    phase_of: dict[int, str | None] = {}
    for item in module.bench_items:
        bench = getattr(item, "bench", None)
        if isinstance(bench, BenchIteration):
            name = bench.participant.name
            if bench.slot.warmup:
                warmups.setdefault((name, bench.slot.phase), []).append(item)
            else:
                measured.setdefault(name, []).append(item)
                phase_of[id(item)] = bench.slot.phase
        elif isinstance(item, ThresholdItem):
            thresholds.setdefault(item.participant, []).append(item)

    def choose(candidates: Sequence[pytest.Item]) -> int:
        fresh = [item for item in candidates if id(item) not in chosen]
        chosen.update(id(item) for item in fresh)
        return len(fresh)

    iterations_added = thresholds_added = 0
    for name, own in thresholds.items():
        runs_again = any(id(item) in chosen for item in measured.get(name, ()))
        if last_failed and runs_again:
            thresholds_added += choose(own)
        if any(id(item) in chosen for item in own):
            iterations_added += choose(measured.get(name, ()))

    warmup_added = 0
    left_out: list[pytest.Item] = []
    for (name, phase), own in warmups.items():
        running = [item for item in measured.get(name, ()) if id(item) in chosen]
        if any(phase_of[id(item)] == phase for item in running):
            warmup_added += choose(own)
        elif running:
            for item in own:
                if id(item) in chosen:
                    chosen.discard(id(item))
                    left_out.append(item)
    return (warmup_added, iterations_added, thresholds_added), left_out


def _in_units(
    items: Sequence[pytest.Item], chosen: set[int], modules: dict[int, BenchModule]
) -> list[pytest.Item]:
    """The chosen items: each unit's together, in collected order, where the first of its
    items stood in ``items``; other items where they stood."""
    units: dict[Hashable, list[pytest.Item]] = {}
    for module in modules.values():
        for item in module.bench_items:
            if id(item) in chosen:
                units.setdefault(_unit_of(item, module.bench_round_mode), []).append(item)
    ordered: list[pytest.Item] = []
    placed: set[Hashable] = set()
    for item in items:
        parent = item.parent
        if not (isinstance(parent, BenchModule) and id(parent) in modules):
            ordered.append(item)
            continue
        unit = _unit_of(item, parent.bench_round_mode)
        if unit in units and unit not in placed:
            placed.add(unit)
            ordered.extend(units[unit])
    return ordered
