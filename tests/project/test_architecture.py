"""The import rules of the package (docs: Architecture), checked on the source tree.

The package is cut into areas, one folder each (a public root module belongs to the area whose
facade it is); :data:`AREAS` lists them and :data:`MAY_IMPORT` says which areas each area may
import, bottom up:

* ``base`` (``_base/``, ``records``): the leaves; they import nothing else of the package.
* ``config`` (``_config/``, ``config``): models, reading, validation, the threshold language.
* ``analysis`` (``_analysis/``, ``scoring``, ``compare``): statistics, scoring, comparisons; pure.
* ``instruments`` (``_instruments/``): counting what measured code executes (callgrind's
  client requests, the helper's build, the session's launch under valgrind).
* ``engine`` (``_engine/``, ``schedule``, ``executor``, ``context``): knobs, plans, running.
* ``ab`` (``_ab/``): an A/B session's revision worktree and its two side processes.
* ``store`` (SQLite) and ``platform`` (httpx; the leaves only): the I/O.
* ``results``: the one model of a finished run, built live or from the store.
* ``views`` (``_views/``, ``report/``): render the model; ``_views`` reads no store.
* ``session``: one bench session's life, which the glue and the runner both drive.
* ``runner``: programmatic runs; ``cli``: argument handling for every command.
* ``plugin`` (``plugin``, ``hookspecs``, ``_plugin/``): the glue, the only code that imports
  pytest.

No import cycles between modules (lazy, function-level imports count). The runner is reached
lazily from the CLI's ``main`` and the facade's ``__getattr__``; the platform commands and
``init`` lazily from the CLI's ``main``; importing ``pytest_benchsdk`` loads no session, runner
or platform.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_benchsdk

PACKAGE = "pytest_benchsdk"
ROOT = Path(pytest_benchsdk.__file__).parent


def _p(*names: str) -> tuple[str, ...]:
    return tuple(f"{PACKAGE}.{name}" for name in names)


#: Every module but the package's ``__init__`` belongs to exactly one area.
AREAS: dict[str, tuple[str, ...]] = {
    "base": _p("_base", "records"),
    "config": _p("_config", "config"),
    "analysis": _p("_analysis", "scoring", "compare"),
    "instruments": _p("_instruments"),
    "engine": _p("_engine", "schedule", "executor", "context"),
    "ab": _p("_ab"),
    "store": _p("store"),
    "platform": _p("platform"),
    "results": _p("results"),
    "views": _p("_views", "report"),
    "session": _p("_session"),
    "runner": _p("runner"),
    "cli": _p("cli", "__main__"),
    "plugin": _p("plugin", "hookspecs", "_plugin"),
}
#: The areas under the session, which it and the entry points (cli, plugin) may import.
_BELOW_ENTRY = {
    "base",
    "config",
    "analysis",
    "instruments",
    "engine",
    "store",
    "platform",
    "results",
    "views",
}
#: Which areas an area may import (its own always).
MAY_IMPORT: dict[str, set[str]] = {
    "base": set(),
    "config": {"base"},
    "analysis": {"base"},
    "instruments": {"base"},
    "engine": {"base", "config", "analysis", "instruments"},
    "ab": {"base", "config", "analysis", "instruments", "engine"},
    "store": {"base", "analysis"},
    "platform": {"base"},
    "results": {"base", "config", "analysis", "instruments", "engine", "store"},
    "views": {"base", "config", "analysis", "instruments", "engine", "results", "store"},
    "session": _BELOW_ENTRY,
    "runner": {
        "base",
        "config",
        "analysis",
        "instruments",
        "engine",
        "platform",
        "results",
        "session",
    },
    "cli": _BELOW_ENTRY | {"runner"},
    "plugin": _BELOW_ENTRY | {"session", "ab"},
}
GLUE = AREAS["plugin"]
RUNNER = AREAS["runner"]
SESSION = AREAS["session"]
#: The platform commands and ``init``: reached only lazily from the CLI's ``main``.
PLATFORM_CLI = _p("cli._platform")
SCAFFOLD = _p("cli._scaffold")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _all_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def _imported_names(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> set[str]:
    """Absolute names a statement imports: for ``from X import y``, X.y where y is a module,
    else X (a package's ``__init__`` that runs because a submodule is imported is not an
    import of it, as for Python itself)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    modules = _modules()
    names = {f"{target}.{alias.name}" for alias in node.names}
    found = {name for name in names if name in modules}
    return found if found == names else {target} | found


@functools.cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _all_imports(tree):
            edges |= {t for t in _imported_names(name, is_package, node) if t in modules}
        edges.discard(name)
        graph[name] = edges
    return graph


def _in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.slow
def test_only_the_glue_imports_pytest() -> None:
    offenders: list[str] = []
    for name, path in _modules().items():
        if _in(name, GLUE):
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in _all_imports(tree):
            names = _imported_names(name, path.name == "__init__.py", node)
            if any(_in(n, ("pytest", "_pytest")) for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_glue_is_where_the_tree_says() -> None:
    modules = _modules()
    importers = {
        name
        for name, path in modules.items()
        if any(
            _in(n, ("pytest", "_pytest"))
            for node in _all_imports(ast.parse(path.read_text()))
            for n in _imported_names(name, path.name == "__init__.py", node)
        )
    }
    assert importers, "the glue imports pytest; the scan must find it"
    assert all(_in(name, GLUE) for name in importers)


@pytest.mark.slow
def test_engine_store_and_platform_work_without_pytest() -> None:
    # A real proof on top of the scan: import the non-glue modules with pytest unimportable,
    # then define, run and score a tiny benchmark.
    modules = [name for name in _modules() if not _in(name, GLUE)]
    script = textwrap.dedent(
        f"""
        import importlib, sys
        sys.modules["pytest"] = None
        sys.modules["_pytest"] = None
        for name in {modules!r}:
            importlib.import_module(name)
        from pytest_benchsdk import define_benchmark_config, score, scoring_config_to_spec
        from pytest_benchsdk.context import TaskContext, run_task
        from pytest_benchsdk.schedule import BenchmarkRunOutcome
        from pytest_benchsdk.records import ParticipantRecords
        config = define_benchmark_config(
            benchmark_slug="s", benchmark_name="S", participants=[{{"name": "a"}}],
            iterations=3,
            scoring={{"metrics": [{{"key": "ms", "ceiling": 100,
                                    "weights": {{"median": 1, "p95": 0, "p99": 0}}}}]}},
        )
        records = []
        for i in range(3):
            ctx = TaskContext(participant=None, participant_name="a", task_index=i)
            records.append(run_task(ctx, lambda c: c.measure(ms=10)).record)
        outcome = BenchmarkRunOutcome(
            run_id="x", dashboard_url="", config=None,
            participants=(ParticipantRecords("a", tuple(records)),),
        )
        results = score(outcome, scoring_config_to_spec(config.scoring))
        print(results[0].composite_score)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip()) > 0


@pytest.mark.slow
def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


def test_cycle_detection_sees_lazy_and_type_only_imports(tmp_path: Path) -> None:
    # The graph counts an import inside a function and one under ``if TYPE_CHECKING:`` (the
    # cycles we had hid there: a type-only arrow still ties the two modules together).
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ._plugin.control import controller\n"
        "def f():\n    from ._plugin.items import nodes\n"
    )
    tree = ast.parse(source)
    names = set().union(
        *(_imported_names(f"{PACKAGE}.x", False, node) for node in _all_imports(tree))
    )
    assert {f"{PACKAGE}._plugin.items.nodes", f"{PACKAGE}._plugin.control.controller"} <= names


def _area(module: str) -> str | None:
    found = [area for area, prefixes in AREAS.items() if _in(module, prefixes)]
    assert len(found) <= 1, (module, found)
    return found[0] if found else None


def test_every_module_belongs_to_one_area_and_the_root_holds_the_public_surface() -> None:
    modules = _modules()
    assert [m for m in modules if m != PACKAGE and _area(m) is None] == []
    root = sorted(path.name for path in ROOT.glob("*.py"))
    assert len(root) <= 12, root
    private_at_root = [name for name in root if name.startswith("_") and not name.startswith("__")]
    assert private_at_root == []


@pytest.mark.parametrize("area", sorted(AREAS))
def test_each_area_imports_only_the_areas_below_it(area: str) -> None:
    graph = _graph()
    members = [name for name in graph if _area(name) == area]
    assert members
    allowed = MAY_IMPORT[area] | {area}
    for name in members:
        forbidden = sorted(t for t in graph[name] if _area(t) not in allowed)
        assert forbidden == [], f"{name} ({area}) imports {forbidden}"


def test_the_area_rules_have_no_cycle_and_see_a_forbidden_import() -> None:
    # The table itself is layered (no two areas may import each other), and the check above
    # catches an arrow that points up: the engine importing the store would be reported.
    for area, allowed in MAY_IMPORT.items():
        assert all(area not in MAY_IMPORT[other] for other in allowed), area
    assert "store" not in MAY_IMPORT["engine"]
    assert _area(f"{PACKAGE}.store._results") == "store"
    assert _area(f"{PACKAGE}._engine.executor") == "engine"


#: The glue's sub-areas (``_plugin/<name>/``), bottom up: each imports only those before it.
#: The core (runtime, distribution, items, control) owns seams that the features (the
#: ``benchmark`` fixture, A/B) plug into at wiring, so it never imports a feature.
GLUE_SUBAREAS = ("options", "runtime", "distribution", "items", "control", "benchmark", "ab")


def _glue_subarea(module: str) -> str | None:
    prefix = f"{PACKAGE}._plugin."
    if not module.startswith(prefix):
        return None
    return module[len(prefix) :].split(".")[0]


def test_the_glue_is_cut_into_sub_areas_that_import_downwards() -> None:
    graph = _graph()
    glue = [name for name in graph if _glue_subarea(name) is not None]
    flat = sorted(name for name in glue if _modules()[name].parent.name == "_plugin")
    assert flat == [], "every module of the glue belongs to a sub-area (a folder)"
    assert glue, "the scan must find the glue's modules"
    assert sorted({_glue_subarea(name) for name in glue}) == sorted(GLUE_SUBAREAS)
    upwards: list[str] = []
    for name in glue:
        rank = GLUE_SUBAREAS.index(str(_glue_subarea(name)))
        for target in graph[name]:
            sub = _glue_subarea(target)
            if sub is not None and GLUE_SUBAREAS.index(sub) > rank:
                upwards.append(f"{name} -> {target}")
    assert upwards == []


def test_the_tests_of_the_glue_mirror_its_sub_areas() -> None:
    tests = Path(__file__).resolve().parents[1] / "plugin"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders <= set(GLUE_SUBAREAS), sorted(folders - set(GLUE_SUBAREAS))
    assert sorted(p.name for p in tests.glob("test_*.py")) == []


def test_the_tests_mirror_the_areas() -> None:
    tests = Path(__file__).resolve().parents[1]
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders - {"helpers", "project"} <= set(AREAS), sorted(folders - set(AREAS))


def test_the_text_views_read_no_store() -> None:
    graph = _graph()
    for name in graph:
        if _in(name, _p("_views")):
            assert [t for t in graph[name] if _area(t) == "store"] == [], name


def _function_imports(tree: ast.AST) -> Iterator[tuple[str, ast.Import | ast.ImportFrom]]:
    """Imports inside functions, with the name of the function."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    yield node.name, inner


def test_the_store_cli_reaches_the_platform_commands_only_lazily_from_main() -> None:
    graph = _graph()
    modules = _modules()
    path = modules["pytest_benchsdk.cli"]
    tree = ast.parse(path.read_text())
    views = (*PLATFORM_CLI, *SCAFFOLD)
    top_level = {
        t
        for node in ast.iter_child_nodes(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for t in _imported_names("pytest_benchsdk.cli", False, node)
    }
    assert not [t for t in top_level if _in(t, views)]
    lazy = {
        (function, t)
        for function, node in _function_imports(tree)
        for t in _imported_names("pytest_benchsdk.cli", False, node)
        if _in(t, views)
    }
    assert lazy == {("main", *PLATFORM_CLI), ("main", *SCAFFOLD)}
    for layer in views:
        importers = sorted(
            n
            for n, targets in graph.items()
            if not _in(n, (layer,)) and any(_in(t, (layer,)) for t in targets)
        )
        assert importers == ["pytest_benchsdk.cli"], (layer, importers)


@pytest.mark.slow
def test_store_commands_do_not_load_the_platform(tmp_path: Path) -> None:
    # The proof at run time: the store CLI's own commands run without importing platform code.
    script = textwrap.dedent(
        f"""
        import sys
        from pytest_benchsdk import cli
        status = cli.main(["--store", {str(tmp_path / "none.sqlite3")!r}, "runs"])
        loaded = sorted(m for m in sys.modules if m.startswith(
            ("pytest_benchsdk.platform", "pytest_benchsdk.cli._platform",
             "pytest_benchsdk.cli._scaffold")))
        print(status, loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2 []"


def test_only_the_glue_and_the_cli_import_the_report() -> None:
    graph = _graph()
    report = ("pytest_benchsdk.report",)
    importers = sorted(
        name
        for name, targets in graph.items()
        if not _in(name, report) and any(_in(t, report) for t in targets)
    )
    assert importers, "the session writes --bench-html; the scan must find it"
    assert all(_in(name, (*GLUE, *SESSION, "pytest_benchsdk.cli")) for name in importers), importers


def test_the_runner_is_reached_lazily_from_the_cli() -> None:
    # The facade reaches every public module by name on first use (PEP 562 ``__getattr__``),
    # the runner included; the run-time proof is the next test.
    graph = _graph()
    importers = sorted(
        n
        for n, targets in graph.items()
        if not _in(n, RUNNER) and any(_in(t, RUNNER) for t in targets)
    )
    # The facade names the runner's types for type checkers only (``if TYPE_CHECKING:``).
    assert importers == ["pytest_benchsdk", "pytest_benchsdk.cli"]
    name = "pytest_benchsdk.cli"
    tree = ast.parse(_modules()[name].read_text())
    top_level = {
        t
        for node in ast.iter_child_nodes(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for t in _imported_names(name, True, node)
    }
    assert not [t for t in top_level if _in(t, RUNNER)]
    lazy = {
        f
        for f, node in _function_imports(tree)
        for t in _imported_names(name, True, node)
        if _in(t, RUNNER)
    }
    assert lazy == {"main"}


@pytest.mark.slow
def test_the_facade_imports_nothing_until_a_name_is_asked_for() -> None:
    script = (
        "import sys, pytest_benchsdk\n"
        "print(sorted(m for m in sys.modules if m.startswith('pytest_benchsdk')))\n"
        "pytest_benchsdk.run_benchmark\n"
        "print('pytest_benchsdk.runner' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["['pytest_benchsdk']", "True"]


@pytest.mark.slow
def test_importing_the_package_loads_no_session_runner_or_platform() -> None:
    script = (
        "import sys, pytest_benchsdk\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pytest_benchsdk._session', "
        "'pytest_benchsdk.runner', 'pytest_benchsdk.platform', 'httpx'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_nothing_but_its_entry_imports_the_cli() -> None:
    graph = _graph()
    importers = sorted(
        n
        for n, targets in graph.items()
        if _area(n) != "cli" and any(_area(x) == "cli" for x in targets)
    )
    assert importers == []
