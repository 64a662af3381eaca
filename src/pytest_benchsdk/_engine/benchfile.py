"""Bench files without pytest: which paths are bench files, what a bench module exports, its
schedule, and the identity of each iteration item.

The pytest node classes (:mod:`pytest_benchsdk._plugin.items.nodes`) import the module and turn what
this module reads into items; everything here is plain Python so that the controller, the
scoring of stored runs and tests can use it without a pytest session.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from pytest_benchsdk._config.models import (
    BenchmarkConfig,
    BenchmarkConfigError,
    Participant,
    define_benchmark_config,
    generator_task_problem,
)
from pytest_benchsdk._engine.schedule import (
    BenchmarkSchedule,
    RunArgs,
    Slot,
    UnknownParticipantError,
    UnknownShapeError,
    schedule_benchmark,
)

__all__ = [
    "BenchFile",
    "BenchIteration",
    "BenchSetupError",
    "is_test_module",
    "item_name",
    "load_bench_file",
    "schedule_bench_file",
]


class BenchSetupError(Exception):
    """A bench file cannot be turned into items (bad exports, shape, providers...)."""


def _printable(text: str) -> str:
    # A node id is one line of terminal output (and a junitxml attribute): non-printable
    # characters such as a newline in a participant's name are written as escapes, as pytest
    # does for parametrize ids.
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def item_name(participant: str, slot: Slot) -> str:
    """``task[<participant>-<phase>-<task_index>]`` (no phase part without phases).

    A warm-up slot is ``warmup[<participant>-<phase>-<i>]`` (``warmup[<participant>-<i>]``
    without phases), ``i`` counting from 0 within its phase: a name of its own, so
    ``-k warmup`` / ``-k "not warmup"`` tell warm-up from measured iterations and a warm-up
    never reads as an iteration of the measured schedule.
    """
    if slot.warmup:
        ordinal = slot.warmup_ordinal if slot.warmup_ordinal is not None else -slot.index - 1
        kind, tail = "warmup", str(ordinal)
    else:
        kind, tail = "task", str(slot.index)
    parts = [participant] + ([slot.phase] if slot.phase is not None else []) + [tail]
    return f"{kind}[{'-'.join(_printable(part) for part in parts)}]"


@attrs.frozen
class BenchFile:
    """A bench module's exports: its validated config and its task callable."""

    path: Path
    config: BenchmarkConfig
    task: Callable[..., Any]


def _of_this_plugin(value: object) -> bool:
    """Whether a module-level value comes from pytest-benchsdk (its package, a module of it,
    or anything defined in it: ``define_task``, ``Participant``, a ``Phase`` …)."""
    try:
        name: object = (
            value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        )
    except Exception:  # a lazy proxy or the like: not ours
        return False
    return isinstance(name, str) and (name == _PACKAGE or name.startswith(f"{_PACKAGE}."))


_PACKAGE = "pytest_benchsdk"


def is_test_module(module: object) -> bool:
    """Whether an imported module that ``bench_files`` matched is an ordinary test module
    (pytest-benchmark's ``bench_*.py``, say) rather than a bench file.

    A bench file exports a ``config`` made with ``define_benchmark_config`` (or a dict with a
    ``task``), or imports anything of pytest-benchsdk (``define_task``, ``Participant`` …): such
    a module without a valid config or task is a bench file with a problem, and says so. Any
    other module is a test module: pytest collects its ``test_*`` functions and classes.
    """
    namespace = getattr(module, "__dict__", None)
    if not isinstance(namespace, Mapping):
        return False
    config = namespace.get("config")
    if isinstance(config, BenchmarkConfig):
        return False
    task = namespace.get("task", namespace.get("default"))
    if isinstance(config, Mapping) and callable(task):
        return False
    return not any(_of_this_plugin(value) for value in list(namespace.values()))


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
    problem = generator_task_problem(task)
    if problem is not None:
        raise BenchSetupError(f"{path}: {problem}")
    return BenchFile(path=path, config=config, task=task)


def schedule_bench_file(
    bench_file: BenchFile, args: RunArgs, environ: Mapping[str, str]
) -> BenchmarkSchedule:
    """The file's schedule; ``--bench-provider`` names this file does not declare are ignored
    here (the session checks that every name is declared by at least one collected file)."""
    providers = args.providers
    if providers is not None:
        declared = {p.name for p in bench_file.config.participants}
        providers = tuple(n for n in providers if n in declared)
    try:
        return schedule_benchmark(
            bench_file.config,
            args,
            environ,
            providers=providers,
            is_async=inspect.iscoroutinefunction(bench_file.task),
        )
    except (UnknownShapeError, UnknownParticipantError, ValueError) as exc:
        raise BenchSetupError(f"{bench_file.path}: {exc}") from None


@attrs.frozen
class BenchIteration:
    """What a bench item stands for: one participant's iteration at one schedule slot.

    ``group_id`` names the pool the executor runs it in (one participant's iterations, or the
    file's rounds with ``group_by="round"``); ``args`` are the file's custom flag values.
    """

    file_key: str
    participant: Participant
    slot: Slot
    group_id: str
    args: Mapping[str, str]
    #: The iteration's identity in the executor and in records (never a node id). Made once:
    #: the executor's maps and sets hold it for every iteration of the session.
    key: tuple[str, str, int] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "key", (self.file_key, self.participant.name, self.slot.index))
