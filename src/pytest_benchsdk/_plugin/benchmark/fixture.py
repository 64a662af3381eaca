"""The ecosystem's ``benchmark`` fixture and marker (pytest-benchmark's API, as pytest-codspeed
also offers it).

Registered in every session where no other plugin provides the fixture (pytest-benchmark is
the plugin ``benchmark``, pytest-codspeed the plugin ``codspeed``); where one does,
:mod:`.providers` says once which plugin's fixture the tests get and the one step that makes
it this plugin's (the setting that switches the others off). This
module is light: a plain session imports it (the fixture must exist there, calling ``fn`` once
and measuring nothing); what measures is imported when a test asks with ``--bench``
(:mod:`pytest_benchsdk._plugin.benchmark.measuring`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import pytest

if TYPE_CHECKING:
    from pytest_benchsdk._engine.rounds import RoundSettings, RoundStats
    from pytest_benchsdk.records import TaskRecord  # noqa: F401  (RECORD_KEY's, quoted)

__all__ = [
    "MARKER_KEYS",
    "RECORD_KEY",
    "BenchmarkFixture",
    "FixtureAlreadyUsed",
    "Measuring",
    "benchmark",
    "body_benchmarked",
    "install_measuring",
    "is_async",
    "json_safe",
    "marker_options",
    "uses_fixture",
]

#: The ``@pytest.mark.benchmark(...)`` keys pytest-benchmark's fixture takes.
MARKER_KEYS: Final = (
    "group",
    "min_time",
    "max_time",
    "min_rounds",
    "timer",
    "disable_gc",
    "warmup",
    "warmup_iterations",
    "calibration_precision",
)
#: Where a test item keeps its fixture (the measuring side reads it at the report).
FIXTURE_KEY = pytest.StashKey["BenchmarkFixture"]()
#: A test's record made elsewhere, for its report: an A/B session ran it in side B's
#: processes (:mod:`pytest_benchsdk._plugin.ab.benchmarked_tests`), not here.
RECORD_KEY = pytest.StashKey["TaskRecord"]()


class Measuring(Protocol):
    """What measures the fixture's calls in this process (with ``--bench``): it makes each
    test's fixture. Installed with :func:`install_measuring`."""

    def fixture_for(self, node: pytest.Item) -> BenchmarkFixture: ...


_MEASURING_KEY = pytest.StashKey[Measuring]()


def install_measuring(config: pytest.Config, measuring: Measuring) -> None:
    """The session's benchmarked tests are measured by ``measuring``."""
    config.stash[_MEASURING_KEY] = measuring


MARKER_LINE: Final = (
    "benchmark(group=None, min_time=..., max_time=..., min_rounds=..., timer=..., "
    "disable_gc=False, warmup=False): a test benchmarked with the benchmark fixture "
    "(pytest-benchmark's marker), or, without the fixture, a test whose whole body "
    "--bench measures (pytest-codspeed's convention)"
)


class FixtureAlreadyUsed(Exception):
    """The fixture was called twice in one test (pytest-benchmark's error)."""


def marker_options(node: pytest.Item) -> dict[str, Any]:
    """The closest ``benchmark`` marker's keyword arguments, every key checked: an unknown
    key (or a positional argument) is a ``TypeError`` naming what there is, a bad value
    (``min_rounds=-1``, ``max_time="x"``) a ``ValueError`` saying what it must be (the test
    using the marker fails with it, the others run)."""
    marker = node.get_closest_marker("benchmark")
    if marker is None:
        return {}
    unknown = [key for key in marker.kwargs if key not in MARKER_KEYS]
    if marker.args or unknown:
        given = ", ".join([*(repr(a) for a in marker.args), *unknown])
        raise TypeError(
            f"{node.nodeid}: @pytest.mark.benchmark does not take {given} (it takes keyword "
            f"arguments: {', '.join(MARKER_KEYS)})"
        )
    options = dict(marker.kwargs)
    problems = [
        f"{key}={options[key]!r} ({rule})"
        for key, (valid, rule) in _MARKER_VALUES.items()
        if key in options and not valid(options[key])
    ]
    if problems:
        raise ValueError(f"{node.nodeid}: @pytest.mark.benchmark: " + "; ".join(problems))
    return options


def uses_fixture(item: pytest.Item) -> bool:
    return "benchmark" in getattr(item, "fixturenames", ())


def body_benchmarked(item: pytest.Item) -> bool:
    """A marker-only test (pytest-codspeed's convention): marked, without the fixture."""
    return (
        isinstance(item, pytest.Function)
        and not uses_fixture(item)
        and item.get_closest_marker("benchmark") is not None
    )


def is_async(function: object) -> bool:
    """An async test function: another plugin (pytest-asyncio, anyio) runs it, and its body
    is not measured."""
    import inspect

    return inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)


def _count(least: int) -> Callable[[object], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least


def _seconds(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


#: The marker's values, each with what it must be (pytest-benchmark's meaning).
_MARKER_VALUES: Final[dict[str, tuple[Callable[[object], bool], str]]] = {
    "min_rounds": (_count(1), "must be an int >= 1"),
    "min_time": (_seconds, "must be a number of seconds >= 0"),
    "max_time": (_seconds, "must be a number of seconds >= 0"),
    "calibration_precision": (_count(1), "must be an int >= 1"),
    "warmup_iterations": (_count(0), "must be an int >= 0"),
    "warmup": (lambda v: isinstance(v, bool), "must be True or False"),
    "disable_gc": (lambda v: isinstance(v, bool), "must be True or False"),
    "timer": (callable, "must be a function returning seconds, e.g. time.perf_counter"),
}


def _group_of(node: pytest.Item) -> str | None:
    group = marker_options(node).get("group")
    return None if group is None else str(group)


class BenchmarkFixture:
    """What ``def test_x(benchmark)`` receives: pytest-benchmark 5's fixture.

    ``benchmark(fn, *args, **kwargs)`` and ``benchmark.pedantic(...)`` return ``fn``'s value.
    Without ``--bench`` (``measuring`` False) they call ``fn`` once and measure nothing; with
    it they measure in calibrated rounds (:mod:`pytest_benchsdk._engine.rounds`) and
    ``benchmark.stats`` holds the statistics afterwards. ``extra_info`` is stored with the
    test's record; ``group`` and ``name`` say where it is reported (set inside the test too:
    :meth:`reported_as`).
    """

    def __init__(
        self,
        node: pytest.Item,
        *,
        measuring: bool,
        settings: RoundSettings | None = None,
    ) -> None:
        self.name = node.name
        self.fullname = node.nodeid
        callspec = getattr(node, "callspec", None)
        self.param: str | None = getattr(callspec, "id", None)
        self.params: dict[str, Any] | None = dict(callspec.params) if callspec else None
        self.group = _group_of(node)
        self.extra_info: dict[str, Any] = {}
        self.enabled = measuring
        self.disabled = not measuring
        self.settings = settings
        self.stats: BenchmarkStats | None = None
        self.has_error = False
        self._mode: str | None = None
        self.rounds: Any = None
        #: ``--benchmark-cprofile``'s settings (sort, loops, top, dump), where asked.
        self.cprofile: Any = None
        #: The profiled call's top functions (pytest-benchmark's rows), once profiled.
        self.cprofile_rows: list[dict[str, Any]] | None = None

    def reported_as(self, node: pytest.Item) -> tuple[str | None, str | None]:
        """The group and the name the test's result is reported under: ``group`` and
        ``name`` as the test left them (``benchmark.group = "x"``, ``benchmark.name = "y"``
        inside it, before or after the call); the name is None when the test kept its own."""
        group = None if self.group is None else str(self.group)
        name = str(self.name)
        return group, (None if name == node.name or not name.strip() else name)

    def _use(self, mode: str) -> None:
        if self._mode is not None:
            self.has_error = True
            raise FixtureAlreadyUsed(
                f"the benchmark fixture can be used once per test; it was used in "
                f"{self._mode} mode already (one measurement per test: split the test, or "
                "parametrize it)"
            )
        self._mode = mode

    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._use("benchmark(...)")
        _check_callable("benchmark(fn, *args, **kwargs)", function_to_benchmark)
        if not self.enabled:
            return self._once(function_to_benchmark, args, kwargs)
        from pytest_benchsdk._engine.rounds import measure_rounds

        assert self.settings is not None
        try:
            self.rounds = measure_rounds(function_to_benchmark, args, kwargs, self.settings)
        except BaseException:
            self.has_error = True
            raise
        self._measured()
        self._profile(function_to_benchmark, args, kwargs)
        return function_to_benchmark(*args, **kwargs)

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        self._use("benchmark.pedantic(...)")
        _check_callable("benchmark.pedantic(target, ...)", target)
        from pytest_benchsdk._engine.rounds import (
            check_pedantic,
            measure_pedantic,
            pedantic_arguments,
        )

        call_args: Sequence[Any] = tuple(args)
        call_kwargs: Mapping[str, Any] = dict(kwargs or {})
        if not self.enabled:
            # Checked as when measuring, so that a plain run catches what --bench refuses.
            check_pedantic(setup, rounds, warmup_rounds, iterations)
            call_args, call_kwargs = pedantic_arguments(call_args, call_kwargs, setup)
            return self._once(target, call_args, call_kwargs)
        assert self.settings is not None
        try:
            self.rounds, value = measure_pedantic(
                target,
                call_args,
                call_kwargs,
                self.settings,
                setup=setup,
                rounds=rounds,
                warmup_rounds=warmup_rounds,
                iterations=iterations,
            )
        except BaseException:
            self.has_error = True
            raise
        self._measured()
        self._profile(target, call_args, call_kwargs)
        return value

    def _profile(self, fn: Callable[..., Any], args: Any, kwargs: Mapping[str, Any]) -> None:
        """``--benchmark-cprofile``: after the rounds, the profiled call(s)."""
        if self.cprofile is None:
            return
        from pytest_benchsdk._plugin.benchmark.profiling import profile_call

        settings = self.cprofile
        self.cprofile_rows = profile_call(
            fn,
            args,
            kwargs,
            sort=settings.sort,
            loops=settings.loops,
            top=settings.top,
            dump=settings.dump,
            name=self.name,
        )

    def _once(self, fn: Callable[..., Any], args: Any, kwargs: Mapping[str, Any]) -> Any:
        """Without --bench: one call, timed by one clock pair so that ``benchmark.stats``
        (one round) is there for the assertions a suite makes on it; no record is kept."""
        from pytest_benchsdk._engine.rounds import RoundSettings, measure_pedantic

        self.rounds, value = measure_pedantic(
            fn, args, kwargs, RoundSettings(), setup=None, rounds=1, warmup_rounds=0, iterations=1
        )
        self._measured()
        return value

    def _measured(self) -> None:
        from pytest_benchsdk._engine.rounds import RoundStats

        self.stats = BenchmarkStats(
            self, RoundStats.of(self.rounds), instructions=self.rounds.instructions
        )

    def weave(self, target: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "benchmark.weave (pytest-benchmark's aspect weaving) is not supported by "
            "pytest-benchsdk's benchmark fixture: call benchmark(fn, *args) with the function "
            "itself, or run this test with pytest-benchmark (-p no:benchsdk)"
        )

    patch = weave


def _check_callable(call: str, function: object) -> None:
    if not callable(function):
        raise TypeError(
            f"{call}: the function to benchmark must be callable (got {function!r} of type "
            f"{type(function).__name__}); pass the function itself, not its result: "
            "benchmark(fn, arg) rather than benchmark(fn(arg))"
        )


class BenchmarkStats:
    """``benchmark.stats`` after the call: pytest-benchmark's ``Metadata`` (``stats["mean"]``,
    ``stats.stats.min``, ``stats.name``, ``stats.extra_info`` …), in seconds."""

    def __init__(
        self,
        fixture: BenchmarkFixture,
        stats: RoundStats,
        *,
        instructions: Sequence[float] = (),
    ) -> None:
        self.stats = stats
        #: ``--bench-instructions``: each counted round's instructions per call (a count, in
        #: ``as_dict()["instructions"]``, never among the times); None when nothing counted.
        self.instructions: dict[str, Any] | None = _counted(instructions)
        self.name = fixture.name
        self.fullname = fixture.fullname
        self.group = fixture.group
        self.param = fixture.param
        self.params = fixture.params
        self.extra_info = fixture.extra_info

    def __getitem__(self, key: str) -> Any:
        if key in ("iqr", "ops") or hasattr(self.stats, key):
            return getattr(self.stats, key)
        return getattr(self, key)

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "name": self.name,
            "fullname": self.fullname,
            "params": self.params,
            "param": self.param,
            "extra_info": self.extra_info,
            "stats": self.stats.as_dict(),
            **({} if self.instructions is None else {"instructions": self.instructions}),
        }


def _counted(values: Sequence[float]) -> dict[str, Any] | None:
    """A test's instruction counts as a series of their own (``unit`` ``instr``): per call, each
    counted round's, with their min, median and max."""
    if not values:
        return None
    from pytest_benchsdk._base.percentiles import median_positions

    ordered = sorted(values)
    low, high = median_positions(len(ordered))
    median = (ordered[low] + ordered[high]) / 2
    return {
        "unit": "instr",
        "min": ordered[0],
        "median": median,
        "max": ordered[-1],
        "rounds": len(ordered),
        "data": list(values),
    }


@pytest.fixture
def benchmark(request: pytest.FixtureRequest) -> BenchmarkFixture:
    """pytest-benchmark's fixture: ``benchmark(fn, *args, **kwargs)`` runs ``fn`` (once
    without ``--bench``; measured in calibrated rounds with it) and returns its value;
    ``benchmark.pedantic(fn, args=(), kwargs=None, setup=None, rounds=1, warmup_rounds=0,
    iterations=1)`` runs exactly that many rounds; ``benchmark.extra_info`` is kept with the
    result; ``benchmark.stats`` holds the statistics after a measured call."""
    node = request.node
    assert isinstance(node, pytest.Item)
    marker_options(node)  # an unknown key is an error with or without --bench
    measuring = request.config.stash.get(_MEASURING_KEY, None)
    if measuring is None:
        fixture = BenchmarkFixture(node, measuring=False)
    else:
        fixture = measuring.fixture_for(node)
    node.stash[FIXTURE_KEY] = fixture
    return fixture


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Before -m selects: a test that uses the fixture is a benchmark (-m benchmark, and
    # -m "not benchmark" for a quick run), as when it is marked.
    for item in items:
        if "benchmark" in getattr(item, "fixturenames", ()) and (
            item.get_closest_marker("benchmark") is None
        ):
            item.add_marker("benchmark")
    _select(config, items)


def _select(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-benchmark's ``--benchmark-only`` (only the benchmarked tests: the fixture's, the
    marker's, bench files' items) and ``--benchmark-skip`` (none of them), as a selection:
    the others are deselected (this module is registered only where pytest-benchmark is not
    active). ``--codspeed`` selects as pytest-codspeed's does (only the benchmarks: a CI job
    running ``pytest --codspeed`` does not run the whole test suite), where pytest-codspeed
    is not active."""
    codspeed = bool(getattr(config.option, "codspeed", False)) and not (
        config.pluginmanager.has_plugin("codspeed")
    )
    only = bool(getattr(config.option, "benchmark_only", False)) or codspeed
    skip = bool(getattr(config.option, "benchmark_skip", False)) and not only
    if not (only or skip):
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        benchmarked = any(item.iter_markers("benchmark")) or any(item.iter_markers("bench"))
        (kept if benchmarked == only else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def json_safe(value: Mapping[str, Any]) -> dict[str, Any] | None:
    """``extra_info`` as JSON holds it (what JSON cannot, as its ``str``); None when empty.
    Both the record made here and a side process's answer carry it so."""
    if not value:
        return None
    loaded: dict[str, Any] = json.loads(json.dumps(dict(value), default=str))
    return loaded
