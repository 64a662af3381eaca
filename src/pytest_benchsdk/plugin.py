"""pytest-benchsdk's ``pytest11`` entry point: options, hook specs, and the process's role.

The role is decided once, in :func:`pytest_configure`, and each role registers plugin objects
that own their hooks (the model is pytest-xdist's ``plugin.py`` with ``dsession.py`` and
``remote.py``):

========================  =====================================================================
role                      plugins
========================  =====================================================================
every session             the task's fixtures (:mod:`~._plugin.items.fixtures`); the
                          ``benchmark`` fixture (:mod:`~._plugin.benchmark.fixture`), unless
                          pytest-benchmark or pytest-codspeed provides it (switched off
                          before that with ``bench_benchmark_fixture = benchsdk``:
                          :mod:`~._plugin.benchmark.providers`)
no ``--bench``            :class:`UncollectedBenchFiles` (one hint line when bench files were
                          left out, unless a ``--bench*`` option is set; the fixtures explain
                          that they need ``--bench``)
A/B side process          nothing more: the side's own plugin
                          (:mod:`~._plugin.ab.side_session`) runs the tests it is asked for
``--bench-resubmit``      :class:`~._plugin.control.resubmit.ResubmitPlugin`
``--bench-check``         :class:`~._plugin.items.collection.CollectionPlugin`,
                          :class:`~._plugin.control.check.CheckPlugin`
xdist worker              collection, :class:`~._plugin.items.execution.ExecutionPlugin`,
                          :class:`~._plugin.benchmark.measuring.BenchmarkedTests` (which
                          says why it measures nothing under xdist)
controller                collection, execution, benchmarked tests,
                          :class:`~._plugin.control.controller.ControllerPlugin`; under
                          xdist also
                          :class:`~._plugin.distribution.scheduling.DistributedBench`
``--bench-ab`` controller the controller's, and :class:`~._plugin.ab.plugin.ABPlugin`, wired
                          into the core's seams: the item runner, the baseline source
========================  =====================================================================

``--bench`` is also implied by the ini's ``bench = true``, by ``--bench-check``, by a
command-line argument naming a bench file (a path or a node id, as an IDE runs one item) and by
the options in :data:`~._plugin.options.IMPLYING_OPTIONS` given on the command line
(:func:`~._plugin.options.bench_enabled`).

The controller is the process without ``workerinput``: plain pytest, or xdist's controller
(whose runner stays idle, as it runs no item). Everything else is in :mod:`._plugin`; this
module only imports it when ``--bench`` (or a run-nothing mode) asks for it, so a plain test
run pays next to nothing (the hint's pattern match per collected ``.py`` file).
"""

from __future__ import annotations

import copy
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_benchsdk import hookspecs
from pytest_benchsdk._base.files import is_bench_path
from pytest_benchsdk._plugin.benchmark import fixture as benchmark_fixture
from pytest_benchsdk._plugin.benchmark.fixture import MARKER_LINE
from pytest_benchsdk._plugin.benchmark.providers import (
    SwitchedOff,
    fixture_choice,
    other_provider,
    switch_off_others,
)
from pytest_benchsdk._plugin.items import fixtures
from pytest_benchsdk._plugin.options import (
    add_options,
    bench_enabled,
    bench_option_given,
    note_dist_choice,
    spell_out_compare,
)

if TYPE_CHECKING:
    from pytest_benchsdk._plugin.control.controller import ControllerPlugin
    from pytest_benchsdk._plugin.options.settings import BenchOptions

__all__: list[str] = []

#: The controller role's plugin, where this process has it.
_CONTROLLER_KEY = pytest.StashKey["ControllerPlugin"]()
#: The other ``benchmark`` providers the session switched off (``bench_benchmark_fixture``).
_SWITCHED_OFF_KEY = pytest.StashKey["list[str]"]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    add_options(parser, pluginmanager)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    # Every plugin is registered and has declared its options (pytest-benchmark's
    # --benchmark-* stay, in addopts too), and none has been configured: the moment to switch
    # the other benchmark-fixture providers off, when the session asks for this plugin's.
    import os

    if fixture_choice(early_config, os.environ) == "benchsdk":
        early_config.stash[_SWITCHED_OFF_KEY] = switch_off_others(early_config.pluginmanager)
    # As early as the options and the ini are known, before any conftest runs: a session
    # counting instructions re-runs itself under valgrind (the process is replaced).
    if _asks_for_instructions(early_config):
        from pytest_benchsdk._plugin.runtime.instructions import relaunch_under_valgrind

        relaunch_under_valgrind(early_config)
    # A bare --bench-compare means "latest": spelled out before pytest parses the arguments
    # for good, so the word after it stays a path to collect (pytest --bench-compare
    # bench_a.py). The early parse already took that word as the REF: its paths are parsed
    # again, so that the initial conftests are looked for along them too.
    before = list(args)
    spell_out_compare(args)
    if args != before:
        again = parser.parse_known_args(args, namespace=copy.copy(early_config.option))
        known = early_config.known_args_namespace
        for name in ("file_or_dir", "bench_compare"):
            setattr(known, name, getattr(again, name, None))


def _asks_for_instructions(config: pytest.Config) -> bool:
    option = config.known_args_namespace
    if getattr(option, "bench_check", False) or getattr(option, "bench_resubmit", False):
        return False
    if getattr(option, "bench_instructions", False):
        return True
    if getattr(option, "codspeed_mode", None) in ("instrumentation", "simulation") and (
        config.pluginmanager.get_plugin("codspeed") is None
    ):
        return True  # pytest-codspeed's instruction counts: --bench-instructions
    try:
        return bool(config.getini("bench_instructions"))
    except ValueError:
        return False


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, object, object]:
    # Before xdist's own pytest_cmdline_main, which turns -n without --dist into --dist load.
    _before_xdist(config)
    try:
        return (yield)
    finally:
        # Last of all (every plugin's unconfigure and the config's cleanups are done): the
        # bench session hands Ctrl-C back.
        controller = config.stash.get(_CONTROLLER_KEY, None)
        if controller is not None:
            controller.release_ctrl_c()


def _before_xdist(config: pytest.Config) -> None:
    note_dist_choice(config)
    # --bench-check and --bench-resubmit run no iteration: keep them in this process, where
    # collection (check) and the store (resubmit) are, even when -n is in the ini's addopts.
    option = config.option
    runs_nothing = getattr(option, "bench_check", False) or getattr(option, "bench_resubmit", False)
    if runs_nothing and getattr(option, "numprocesses", None):
        option.numprocesses = None
        option.dist = "no"
    elif getattr(option, "bench_worker_pool", None) and getattr(option, "numprocesses", None):
        # The pool's worker is this process: its claim, heartbeats and barriers live here,
        # while xdist would run the steps elsewhere.
        raise pytest.UsageError(
            "--bench-worker-pool makes this pytest process one worker of a platform pool; "
            "it cannot be split with pytest-xdist (-n). Start more pytest processes with "
            "the same --bench-run-key instead (one per machine or CI job)."
        )


def _declare_pytest_benchmark_hooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """pytest-benchmark's hook specifications, unless it declared them (it is active): a
    conftest implementing them loads instead of ending in "unknown hook". Here, after every
    plugin's ``pytest_addhooks`` and before collection checks the hooks."""
    missing = {
        name: staticmethod(getattr(hookspecs.PytestBenchmarkHooks, name))
        for name in hookspecs.PYTEST_BENCHMARK_HOOKS
        if getattr(getattr(pluginmanager.hook, name, None), "spec", None) is None
    }
    if missing:
        pluginmanager.add_hookspecs(type("PytestBenchmarkHooks", (), missing))


def pytest_configure(config: pytest.Config) -> None:
    _declare_pytest_benchmark_hooks(config.pluginmanager)
    config.addinivalue_line("markers", "bench: a benchmark iteration run by pytest-benchsdk")
    config.pluginmanager.register(fixtures, "benchsdk-fixtures")
    other = other_provider(config.pluginmanager)
    if other is None:
        config.addinivalue_line("markers", MARKER_LINE)
        config.pluginmanager.register(benchmark_fixture, "benchsdk-benchmark")
        switched_off = config.stash.get(_SWITCHED_OFF_KEY, None)
        if switched_off:
            config.pluginmanager.register(SwitchedOff(switched_off), "benchsdk-switched-off")
    else:
        config.pluginmanager.register(other, "benchsdk-other-benchmark")
    if config.pluginmanager.has_plugin("benchsdk-ab-side"):
        # An A/B session's side process (_plugin.ab.side_session): its plugin runs the tests the
        # session asks for and measures them; no bench role here, whatever the ini says.
        return
    if not (bench_option_given(config) or bench_enabled(config)):
        # A plain test run: nothing more is imported. Whoever set a --bench* option (addopts
        # included) knows about --bench: the hint is for the others.
        patterns = tuple(config.getini("bench_files"))
        config.pluginmanager.register(
            UncollectedBenchFiles(config, patterns), "benchsdk-uncollected"
        )
        return
    from pytest_benchsdk._plugin.options.settings import BenchOptions

    options = BenchOptions.from_config(config)
    if options.enabled:
        # xdist workers get the controller's options, not its command line (what implied
        # --bench): record the decision in the options so they take the same role.
        config.option.bench = True
    if options.resubmit:
        _register_resubmit(config, options)
    elif options.enabled or options.check:
        _register_collecting_roles(config, options)


class UncollectedBenchFiles:
    """Without ``--bench``: count the bench files collection passes over and say, in one line
    at the end, how to run them (a newcomer who forgot ``--bench`` otherwise sees only "no tests
    ran"). Under xdist the workers collect; they hand their count to the controller."""

    def __init__(self, config: pytest.Config, patterns: tuple[str, ...]) -> None:
        self.config = config
        self.patterns = patterns
        self.paths: set[Path] = set()
        self.worker_count = 0

    def pytest_collect_file(self, file_path: Path) -> None:
        if file_path.suffix == ".py" and is_bench_path(file_path, self.patterns):
            self.paths.add(file_path)

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        # A bench_*.py that pytest collected tests from is a test module (pytest-benchmark's
        # bench_*.py, with python_files = bench_*.py): no bench file was left out.
        if self.paths:
            self.paths.discard(item.path)

    def pytest_sessionfinish(self) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["benchsdk_uncollected"] = len(self.paths)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.worker_count = max(self.worker_count, int(output.get("benchsdk_uncollected", 0)))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        count = max(len(self.paths), self.worker_count)
        if count and self.config.getoption("verbose") > -2:
            terminalreporter.write_line(
                f"benchsdk: {count} bench file(s) not collected "
                f"({', '.join(self.patterns)}); run with --bench or set bench = true in the ini"
            )


def _register_resubmit(config: pytest.Config, options: BenchOptions) -> None:
    import os

    from pytest_benchsdk._plugin.control.resubmit import ResubmitPlugin

    config.pluginmanager.register(
        ResubmitPlugin(config, options, dict(os.environ)), "benchsdk-resubmit"
    )


def _register_collecting_roles(config: pytest.Config, options: BenchOptions) -> None:
    from pytest_benchsdk._plugin.items.collection import CollectionPlugin
    from pytest_benchsdk._plugin.runtime.catalog import Catalog

    catalog = Catalog.install(config, options)
    register = config.pluginmanager.register
    if options.enabled and options.instructions:
        from pytest_benchsdk._plugin.runtime.instructions import InstructionsPlugin

        register(InstructionsPlugin(options.instructions_calls), "benchsdk-instructions")
    register(CollectionPlugin(catalog, runs_items=not options.check), "benchsdk-collection")
    if options.enabled:
        from pytest_benchsdk._plugin.distribution.loadgroup import plain_args

        _rewrite_asserts_in_bench_files(config, options.file_patterns)
        # An id pasted from an older run's output may carry xdist's group: find the item.
        plain_args(config.args)
    if options.check:
        from pytest_benchsdk._plugin.control.check import CheckPlugin

        register(CheckPlugin(catalog), "benchsdk-check")
        return
    if not options.enabled:
        return
    from pytest_benchsdk._plugin.distribution.scheduling import DistributedBench, xdist_distributes
    from pytest_benchsdk._plugin.items.execution import ExecutionPlugin, hand_over_to_xdist

    benchmarked = None
    # --benchmark-disable: benchmarked tests call their function once, as without --bench.
    if other_provider(config.pluginmanager) is None and not options.benchmarks_disabled:
        from pytest_benchsdk._plugin.benchmark.measuring import (
            BenchmarkedTests,
            side_by_side_note,
        )

        # Under xdist the workers measure side by side (as pytest-codspeed's do): a wall-time
        # group says so in its notes; a count does not mind the neighbours.
        side_by_side = None
        if xdist_distributes(config) and not options.instructions:
            side_by_side = side_by_side_note(len(getattr(config.option, "tx", None) or ()))
        benchmarked = BenchmarkedTests(
            catalog, in_worker=hasattr(config, "workerinput"), side_by_side=side_by_side
        )
        register(benchmarked, "benchsdk-benchmarked")
    if hasattr(config, "workerinput"):
        register(ExecutionPlugin(config, hand_over_to_xdist(config)), "benchsdk-execution")
        return
    from pytest_benchsdk._plugin.control.controller import ControllerPlugin

    controller = ControllerPlugin(catalog)
    register(controller, "benchsdk-controller")
    config.stash[_CONTROLLER_KEY] = controller
    if benchmarked is not None:
        benchmarked.attach(controller.session, controller.remember_local)
        controller.test_groups = benchmarked
        _call_pytest_benchmark_hooks(config, controller, benchmarked)
    if xdist_distributes(config):
        register(DistributedBench(catalog), "benchsdk-distribution")
    execution = ExecutionPlugin(config, controller.keep_all, on_payload=controller.remember_local)
    register(execution, "benchsdk-execution")
    if options.ab is not None:
        from pytest_benchsdk._plugin.ab.plugin import ABPlugin
        from pytest_benchsdk._plugin.items.nodes import install_item_runner

        ab = ABPlugin(
            config,
            catalog,
            controller.session,
            write=controller.write,
            local_payload=controller.local_payload,
            benchmarked=benchmarked,
            revision=options.ab,
            setup=options.ab_setup,
            mode=options.ab_mode,
            processes=_ab_processes(config, options),
        )
        register(ab, "benchsdk-ab")
        install_item_runner(config, ab)
        controller.baseline_source = ab.baseline


def _call_pytest_benchmark_hooks(
    config: pytest.Config, controller: ControllerPlugin, benchmarked: Any
) -> None:
    """pytest-benchmark's hooks where they mean something: its machine and commit info in
    the run environment of a session with benchmarked tests, its JSON hooks around
    ``--bench-export pytest-benchmark`` (:mod:`._plugin.benchmark.compat`)."""
    import os

    from pytest_benchsdk._plugin.benchmark.compat import (
        complete_environment,
        pytest_benchmark_json,
    )
    from pytest_benchsdk._views.pytest_benchmark import PYTEST_BENCHMARK

    session = controller.session
    # (Under xdist the controller collects no test: the groups its workers reported count.)
    measured = lambda: bool(benchmarked.tests or benchmarked.groups)  # noqa: E731
    session.complete_environment = complete_environment(
        config, dict(os.environ), measured, session.session_errors
    )
    writer = pytest_benchmark_json(config)
    session.export_writers[PYTEST_BENCHMARK] = writer
    session.pytest_benchmark_writer = writer


def _rewrite_asserts_in_bench_files(config: pytest.Config, patterns: tuple[str, ...]) -> None:
    """Give bench files the assertion rewriting test modules get (python_files only, else)."""
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    fnpats = getattr(hook, "fnpats", None)
    if isinstance(fnpats, list):
        hook.fnpats = [*fnpats, *(p for p in patterns if p not in fnpats)]  # type: ignore[union-attr]


def _ab_processes(config: pytest.Config, options: BenchOptions) -> int:
    """Processes per A/B side: ``--bench-ab-processes``, else its default, but one when the
    session counts instructions (a count does not move with a process's memory layout the way
    its time does, so more processes would only start more interpreters under valgrind)."""
    if options.instructions and config.getoption("bench_ab_processes", None) is None:
        return 1
    return options.ab_processes
