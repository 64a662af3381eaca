"""The import rules of the package (README → Architecture), checked on the source tree.

* Only the glue (``plugin.py``, ``hookspecs.py``, ``_plugin/``) imports pytest.
* No import cycles between the package's modules, lazy (function-level) imports included.
* The layers, bottom up: the leaves (``_clock``, ``_coordination``, ``_files``, ``_js``,
  ``_modes``, ``_numbers``, ``_public``, ``_redact``, ``records``); the engine; the store
  (engine and leaves); ``results``, the model of a finished run (store, engine, leaves); the
  views: ``_views`` (text, Markdown, JSON: ``results``, engine, leaves, no store), ``report/``
  (the HTML report: ``results``, ``_views``, the store, the engine, the leaves; only the glue
  and the CLI use it) and the store CLI; the glue on top. ``platform/`` uses only the leaves.
* The store CLI (``cli``, run by ``__main__``) uses no glue and no platform; nothing but
  ``__main__`` imports it.
* The platform commands (``platform_cli``, upstream ``bench``'s ``auth``/``runs``/… under
  ``pytest-benchsdk platform``) are a view above ``platform/``: they use the platform and the
  leaves only. The store CLI reaches them through one lazy import in its ``main`` (when the
  ``platform`` command runs), never at module level, so the store commands never load the
  platform; nothing else imports them. The scaffolder (``_scaffold``, ``pytest-benchsdk init``)
  imports nothing of the package and is reached the same way.
* The session (``_session``: one bench session's runs from their opening to the summary, the
  store, the platform link) is the engine-side home of a run's life that both paths drive: it
  sits above ``results``, the store, the platform and the views, and imports no glue, no CLI and
  no runner. The programmatic runs (``runner``: ``run_benchmark`` … and ``pytest-benchsdk run``)
  sit above the session and beside the glue (neither imports the other); the store CLI reaches
  the runner only lazily from its ``main``, the package's facade only lazily from its module
  ``__getattr__`` (importing ``pytest_benchsdk`` in every pytest process stays cheap).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_benchsdk

PACKAGE = "pytest_benchsdk"
ROOT = Path(pytest_benchsdk.__file__).parent

GLUE = ("pytest_benchsdk.plugin", "pytest_benchsdk.hookspecs", "pytest_benchsdk._plugin")
#: The store CLI and its ``python -m`` entry: above the store and the engine.
CLI = ("pytest_benchsdk.cli", "pytest_benchsdk.__main__")
#: The platform commands: a view above ``platform/``, dispatched lazily by the store CLI.
PLATFORM_CLI = ("pytest_benchsdk.platform_cli",)
#: ``pytest-benchsdk init``: templates and file writing, dispatched lazily by the store CLI.
SCAFFOLD = ("pytest_benchsdk._scaffold",)
LEAVES = (
    "pytest_benchsdk._clock",
    "pytest_benchsdk._coordination",
    "pytest_benchsdk._files",
    "pytest_benchsdk._js",
    "pytest_benchsdk._modes",
    "pytest_benchsdk._numbers",
    "pytest_benchsdk._public",
    "pytest_benchsdk._redact",
    "pytest_benchsdk.records",
)
#: The layers above the engine.
RESULTS = ("pytest_benchsdk.results",)
VIEWS = ("pytest_benchsdk._views", "pytest_benchsdk.report")
#: One bench session's life (both paths drive it), and the programmatic runs above it.
SESSION = ("pytest_benchsdk._session",)
RUNNER = ("pytest_benchsdk.runner",)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: module level and inside functions, but not in
    ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if _is_type_checking_block(node):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _runtime_imports(node)


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


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _runtime_imports(tree):
            edges |= {t for t in _imported_names(name, is_package, node) if t in modules}
        edges.discard(name)
        graph[name] = edges
    return graph


def _in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


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


def test_cycle_detection_sees_lazy_imports(tmp_path: Path) -> None:
    # The scan must count an import inside a function (the cycles we had were lazy ones).
    tree = ast.parse("def f():\n    from ._plugin import nodes\n")
    names = set().union(
        *(_imported_names(f"{PACKAGE}.x", False, node) for node in _runtime_imports(tree))
    )
    assert f"{PACKAGE}._plugin.nodes" in names
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pytest\n")
    assert [n for n in _runtime_imports(tree) if isinstance(n, ast.Import)] == []


@pytest.mark.parametrize(
    ("layer", "allowed"),
    [
        (("pytest_benchsdk.platform",), ("pytest_benchsdk.platform", *LEAVES)),
        (
            PLATFORM_CLI,
            (*PLATFORM_CLI, "pytest_benchsdk.platform", *LEAVES),
        ),
        (SCAFFOLD, ()),
        (
            ("pytest_benchsdk.store",),
            (
                "pytest_benchsdk.store",
                *LEAVES,
                "pytest_benchsdk.scoring",
                "pytest_benchsdk._runenv",
                "pytest_benchsdk._stats",
            ),
        ),
    ],
)
def test_io_layers_import_only_what_they_may(
    layer: tuple[str, ...], allowed: tuple[str, ...]
) -> None:
    graph = _graph()
    members = [name for name in graph if _in(name, layer)]
    assert members
    for name in members:
        forbidden = sorted(t for t in graph[name] if not _in(t, allowed))
        assert forbidden == [], f"{name} imports {forbidden}"


def _engine(graph: dict[str, set[str]]) -> list[str]:
    upper = (
        *GLUE,
        "pytest_benchsdk.store",
        "pytest_benchsdk.platform",
        *RESULTS,
        *VIEWS,
        *CLI,
        *PLATFORM_CLI,
        *SCAFFOLD,
        *SESSION,
        *RUNNER,
    )
    return [n for n in graph if n != PACKAGE and not _in(n, upper)]


@pytest.mark.parametrize(
    ("layer", "forbidden_layers"),
    [
        (RESULTS, (*GLUE, "pytest_benchsdk.platform", *VIEWS, *CLI, *SESSION, *RUNNER)),
        (
            ("pytest_benchsdk._views",),
            (
                *GLUE,
                "pytest_benchsdk.platform",
                "pytest_benchsdk.store",
                "pytest_benchsdk.report",
                *CLI,
                *SESSION,
                *RUNNER,
            ),
        ),
        (
            ("pytest_benchsdk.report",),
            (*GLUE, "pytest_benchsdk.platform", *CLI, *SESSION, *RUNNER),
        ),
        (SESSION, (*GLUE, *CLI, *PLATFORM_CLI, *SCAFFOLD, *RUNNER)),
        (RUNNER, (*GLUE, *CLI, *PLATFORM_CLI, *SCAFFOLD)),
    ],
    ids=["results", "views", "report", "session", "runner"],
)
def test_results_and_views_sit_above_the_engine_and_below_the_glue(
    layer: tuple[str, ...], forbidden_layers: tuple[str, ...]
) -> None:
    graph = _graph()
    members = [name for name in graph if _in(name, layer)]
    assert members
    for name in members:
        forbidden = sorted(t for t in graph[name] if _in(t, forbidden_layers))
        assert forbidden == [], f"{name} imports {forbidden}"


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
    assert lazy == {("main", "pytest_benchsdk.platform_cli"), ("main", "pytest_benchsdk._scaffold")}
    for layer in views:
        importers = sorted(
            n
            for n, targets in graph.items()
            if not _in(n, (layer,)) and any(_in(t, (layer,)) for t in targets)
        )
        assert importers == ["pytest_benchsdk.cli"], (layer, importers)


def test_store_commands_do_not_load_the_platform(tmp_path: Path) -> None:
    # The proof at run time: the store CLI's own commands run without importing platform code.
    script = textwrap.dedent(
        f"""
        import sys
        from pytest_benchsdk import cli
        status = cli.main(["--store", {str(tmp_path / "none.sqlite3")!r}, "runs"])
        loaded = sorted(m for m in sys.modules
                        if m.startswith(("pytest_benchsdk.platform", "pytest_benchsdk._scaffold")))
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


def test_the_runner_is_reached_lazily_from_the_cli_and_the_facade() -> None:
    graph = _graph()
    importers = sorted(
        n
        for n, targets in graph.items()
        if not _in(n, RUNNER) and any(_in(t, RUNNER) for t in targets)
    )
    assert importers == [PACKAGE, "pytest_benchsdk.cli"]
    for name, function in ((PACKAGE, "__getattr__"), ("pytest_benchsdk.cli", "main")):
        tree = ast.parse(_modules()[name].read_text())
        top_level = {
            t
            for node in ast.iter_child_nodes(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for t in _imported_names(name, name == PACKAGE, node)
        }
        assert not [t for t in top_level if _in(t, RUNNER)], name
        lazy = {
            f
            for f, node in _function_imports(tree)
            for t in _imported_names(name, name == PACKAGE, node)
            if _in(t, RUNNER)
        }
        assert lazy == {function}, (name, lazy)


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


def test_engine_imports_no_glue_store_or_platform() -> None:
    graph = _graph()
    upper = (
        *GLUE,
        "pytest_benchsdk.store",
        "pytest_benchsdk.platform",
        *RESULTS,
        *VIEWS,
        *CLI,
        *PLATFORM_CLI,
        *SCAFFOLD,
        *SESSION,
        *RUNNER,
    )
    engine = _engine(graph)
    assert "pytest_benchsdk.executor" in engine
    for name in engine:
        forbidden = sorted(t for t in graph[name] if _in(t, upper))
        assert forbidden == [], f"{name} imports {forbidden}"


def test_the_cli_uses_no_glue_or_platform_and_nothing_imports_it() -> None:
    graph = _graph()
    assert "pytest_benchsdk.cli" in graph
    for name in CLI:
        # platform_cli is a separate view (checked above): "pytest_benchsdk.platform" as a
        # prefix does not cover "pytest_benchsdk.platform_cli".
        forbidden = sorted(t for t in graph[name] if _in(t, (*GLUE, "pytest_benchsdk.platform")))
        assert forbidden == [], f"{name} imports {forbidden}"
    importers = sorted(n for n, targets in graph.items() if "pytest_benchsdk.cli" in targets)
    assert importers == ["pytest_benchsdk.__main__"]
