"""Every example in the documentation (docs/**/*.md, README.md) runs and says what it shows.

The pages are read with Sybil's MyST parsers, one document at a time, in a fresh temporary
directory that is the working directory of everything the page runs, in page order:

* a ```` ```python ```` block is executed in the page's namespace (one per page, so later blocks
  see what earlier ones defined). A block whose first line is a file name comment
  (``# bench_serialize.py``) is also written to that file, so a later console block can run
  it; so is an ```` ```ini ```` / ```` ```toml ```` block that starts that way. Invisible set-up
  blocks (``% invisible-code-block: python``) prepare what a page assumes exists; they get
  ``REPO`` (the checkout), ``quick_start_results()`` (runs the quick start's dry run of
  ``examples/`` here, so the store holds its runs) and ``use_loopback_platform()`` (starts the
  tests' loopback platform, ``tests/helpers/platform_server.py``, and points the page's
  commands at it with an API key), ``command_environment()`` (the environment the page's
  commands run in), ``set_page_env(**values)`` (more of it) and ``import_from(folder)`` (the
  page's python blocks import from there) in the namespace;
* a ```` ```console ```` block is run for real: each ``$ command`` line runs in a shell, and the
  lines shown after it must appear in its output, in order (other lines may come between; a
  line ``...`` or ``…`` only says so). Numbers, run ids, time units and the three verdict words
  may differ: this machine's numbers are not the page's;
* a console block written as a ``{code-block} console`` directive with a caption starting
  "Illustrative" needs what a test cannot have (a platform account, a browser to approve a
  login, CI shards): its commands are checked loosely, each option it uses must be one the
  command's ``--help`` lists.

Other blocks (``bash``, ``yaml``, ``text``, ``json``) are shown, not run.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sybil = pytest.importorskip("sybil", reason="the docs extra (pip install -e '.[docs]')")

from sybil import Example, Sybil  # noqa: E402
from sybil.parsers.myst import CodeBlockParser, SkipParser  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [*sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts), ROOT / "README.md"]
_FILE_HEADER = re.compile(r"^# ([\w./-]+\.(?:py|ini|toml|cfg))\n")
_ELLIPSIS = {"...", "…"}


#: Variables a page's set-up adds to its commands' environment (the loopback platform's URL).
_PAGE_ENV: dict[str, str] = {}


def _environment() -> dict[str, str]:
    """The commands' environment: this interpreter's scripts first, no session or CI settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "BENCHSDK_", "BENCHMARKS_", "BENCHMARK_", "GITHUB_"))
        and key not in {"CI", "COLUMNS", "LINES"}
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "80"
    env["HOME"] = str(Path.cwd() / ".home")  # no saved login, no ~/.benchsdk of the machine's
    # The pages show what a project with only pytest-benchsdk installed sees: the test extra's
    # pytest-benchmark and pytest-codspeed are not loaded, as if not installed.
    env["PYTEST_ADDOPTS"] = "-p no:benchmark -p no:codspeed"
    env.update(_PAGE_ENV)
    return env


#: What makes a command line more than a program and its arguments (a shell's work).
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?~\\]")


def _run(command: str) -> subprocess.CompletedProcess[str]:
    """Runs ``command`` in a shell here: stdout and stderr interleaved, as a terminal shows them.

    A plain ``pytest-benchsdk ARGS`` line (no shell syntax) runs ``cli.main`` in this process,
    in the same environment, which is what the console script calls: the page's commands are
    checked for what they print, and ~1 s of interpreter start-up each is the suite's, not the
    reader's (``tests/cli/`` keeps the real script in its own process).
    """
    argv = shlex.split(command)
    if argv[:1] == ["pytest-benchsdk"] and not _SHELL_SYNTAX.search(command):
        return _run_cli(argv[1:])
    return subprocess.run(
        command, shell=True, cwd=Path.cwd(), env=_environment(), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=600, check=False,
    )  # fmt: skip


def _run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    from pytest_benchsdk.cli import main

    output = io.StringIO()
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(_environment())
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            try:
                code = main(args)
            except SystemExit as exc:  # as the interpreter would map it
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(["pytest-benchsdk", *args], code, output.getvalue())


_NUMBER = r"[-+]?(?:\d[\d,]*)(?:\.\d+)?(?:e[-+]?\d+)?"
_TIME_UNIT = r"(?:ns|µs|ms|s)"
_VERDICT = r"(?:regressed|improved|unchanged)\*?"
_PYTEST_CLOCK = re.compile(r"(?<=s) \(\d+:\d\d:\d\d\)$")


def line_pattern(shown: str) -> re.Pattern[str]:
    """A shown output line as a pattern that this machine's line matches.

    Numbers, hex run ids and commits (7 hex digits or more), time units and verdicts are
    wildcards of their kind; ``...`` / ``…``
    inside a line stands for anything; runs of spaces for any spacing (tables realign when
    numbers change width).
    """
    if shown.strip() == "options:":  # argparse before Python 3.10 said "optional arguments:"
        return re.compile(r"(?:options|optional arguments):")
    out: list[str] = []
    token = re.compile(
        rf"(?P<ellipsis>(?:\.{{3,}}|…)+)|(?P<hex>\b(?=[0-9a-f]*\d)[0-9a-f]{{7,}}\b)"
        rf"|(?P<verdict>\b{_VERDICT})"
        rf"|(?P<unit>(?<=[\d ])(?:ns|µs|ms|s)\b)|(?P<number>{_NUMBER})|(?P<space>\s+)"
    )
    pos = 0
    text = shown.strip()
    for match in token.finditer(text):
        out.append(re.escape(text[pos : match.start()]))
        kind = match.lastgroup
        if kind == "ellipsis":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif kind == "hex":
            out.append(r"[0-9a-f]+")
        elif kind == "verdict":
            out.append(_VERDICT)
        elif kind == "unit":
            out.append(_TIME_UNIT)
        elif kind == "number":
            out.append(_NUMBER)
        else:
            out.append(r"\s+")
        pos = match.end()
    out.append(re.escape(text[pos:]))
    return re.compile("".join(out))


def missing_lines(shown: list[str], actual: str) -> list[str]:
    """The shown lines not found in ``actual``, in order (a subsequence, not a prefix)."""
    # pytest adds "(0:01:10)" to its summary line when a session takes a minute or more, as
    # the pages' examples do on a loaded machine: the shown "in 15.34s" must still match.
    lines = [_PYTEST_CLOCK.sub("", line.strip()) for line in actual.splitlines()]
    at = 0
    missing: list[str] = []
    for want in shown:
        if not want.strip() or want.strip() in _ELLIPSIS:
            continue
        pattern = line_pattern(want)
        for index in range(at, len(lines)):
            if pattern.fullmatch(lines[index]):
                at = index + 1
                break
        else:
            missing.append(want)
    return missing


def _commands(source: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines with the output lines shown after each."""
    found: list[tuple[str, list[str]]] = []
    for line in source.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        elif found:
            found[-1][1].append(line)
    return found


def _check_loosely(command: str) -> str | None:
    """An illustrative command: every option it uses is listed by a ``--help`` of its command.

    The help texts of each leading part of the command line (``prog --help``, ``prog sub
    --help`` …) are read together: global options are in the first, a subcommand's in its own.
    """
    argv = shlex.split(command, comments=True)
    words: list[str] = []  # the program and its (sub)command words, up to the first argument
    for word in argv:
        if word.startswith("-"):
            continue
        if words and not re.fullmatch(r"[a-z]+", word):
            break
        words.append(word)
    help_text = ""
    for cut in range(1, len(words) + 1):
        done = _run(shlex.join([*words[:cut], "--help"]))
        if done.returncode == 0:
            help_text += done.stdout
    if not help_text:
        return f"no --help for {command!r}"
    options = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    unknown = sorted(o for o in options if o not in help_text)
    return f"{command!r}: {unknown} not in its --help" if unknown else None


class ConsoleParser(CodeBlockParser):
    language = "console"

    def evaluate(self, example: Example) -> str | None:
        options: dict[str, Any] = example.region.lexemes.get("options") or {}
        illustrative = str(options.get("caption", "")).startswith("Illustrative")
        for command, shown in _commands(str(example.parsed)):
            if illustrative:
                problem = _check_loosely(command)
                if problem:
                    return problem
                continue
            done = _run(command)
            output = done.stdout
            missing = missing_lines(shown, output)
            if missing:
                return (
                    f"$ {command} (exit status {done.returncode}) did not print:\n"
                    + "\n".join(missing)
                    + f"\n--- it printed:\n{output}"
                )
        return None


class PythonParser(CodeBlockParser):
    language = "python"

    def evaluate(self, example: Example) -> None:
        source = str(example.parsed)
        header = _FILE_HEADER.match(source)
        if header:
            target = Path(header.group(1))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source)
        exec(compile(source, str(example.path), "exec"), example.namespace)


class FileParser(CodeBlockParser):
    """``ini`` / ``toml`` blocks that name their file are written (not executed)."""

    def evaluate(self, example: Example) -> None:
        header = _FILE_HEADER.match(str(example.parsed))
        if header:
            Path(header.group(1)).write_text(str(example.parsed))


_SYBIL = Sybil(
    parsers=[
        PythonParser(),
        ConsoleParser(),
        FileParser(language="ini"),
        FileParser(language="toml"),
        SkipParser(),
    ],
)


def quick_start_results() -> None:
    """What a page that reads the store assumes: the quick start's dry run of ``examples/``."""
    import shutil

    shutil.copytree(ROOT / "examples", "examples", dirs_exist_ok=True)
    Path("pytest.ini").write_text("[pytest]\n")
    done = _run("pytest examples --bench --bench-dry-run -q -p no:cacheprovider")
    assert done.returncode == 0, done.stdout


def _loopback_platform(stack: contextlib.ExitStack) -> Callable[[], str]:
    def use_loopback_platform() -> str:
        """Starts the tests' loopback platform; the page's commands report to it."""
        from helpers.platform_server import API_KEY, LoopbackPlatform

        platform = stack.enter_context(LoopbackPlatform())
        _PAGE_ENV.update(
            BENCHMARKS_PLATFORM_URL=platform.root_url, BENCHMARKS_PLATFORM_API_KEY=API_KEY
        )
        return platform.root_url

    return use_loopback_platform


def _importable(stack: contextlib.ExitStack) -> Callable[[str], None]:
    def import_from(folder: str) -> None:
        """The page's python blocks import modules from ``folder`` (as its commands do, through
        the page's ``pythonpath``); forgotten again after the page."""
        Path(folder).mkdir(parents=True, exist_ok=True)
        path = str(Path(folder).resolve())
        sys.path.insert(0, path)
        # No bytecode of the page's modules: a page that edits one of them right after
        # (A/B's `sed`, the same size, within the same second) would have its next process
        # load the stale .pyc, whose source stamp is the second and the size.
        writes_bytecode = sys.dont_write_bytecode
        sys.dont_write_bytecode = True

        def forget() -> None:
            sys.dont_write_bytecode = writes_bytecode
            sys.path.remove(path)
            for name, module in list(sys.modules.items()):
                if str(getattr(module, "__file__", "") or "").startswith(path):
                    del sys.modules[name]

        stack.callback(forget)

    return import_from


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    document = _SYBIL.parse(page)
    with contextlib.ExitStack() as stack:
        stack.callback(_PAGE_ENV.clear)
        document.namespace.update(
            REPO=ROOT,
            __name__="__docs__",
            quick_start_results=quick_start_results,
            use_loopback_platform=_loopback_platform(stack),
            command_environment=_environment,
            set_page_env=_PAGE_ENV.update,
            import_from=_importable(stack),
        )
        for example in document:
            example.evaluate()


def test_the_matcher_allows_other_numbers_and_units_but_not_other_words() -> None:
    shown = ["  json         30/30    16.5/21.1/21.5 ms", "...", "Results stored in .../x.sqlite3"]
    printed = "x\n  json  30/30  980/1.2/3 µs\nok\nResults stored in /t/x.sqlite3"
    assert missing_lines(shown, printed) == []
    assert missing_lines(shown, "  pickle  30/30  1/2/3 ms\nResults stored in /t/x.sqlite3") == [
        shown[0]
    ]
    assert missing_lines(["a regressed b"], "a unchanged* b") == []
    assert missing_lines(["run 23c15f16b956…"], "run 9a972ae1d55b…") == []
    assert missing_lines(["against HEAD (1a2b3c4)"], "against HEAD (ea17f66)") == []
    assert missing_lines(["59 passed in 15.34s"], "59 passed in 70.70s (0:01:10)") == []


def test_every_option_and_ini_key_is_in_the_options_reference(pytester: pytest.Pytester) -> None:
    # pytest's own --help is the list: whatever module defines the options, none goes missing.
    done = pytester.runpytest_inprocess("--help", "-p", "no:cacheprovider")
    assert done.ret == 0, done.stderr.str()
    help_text = done.stdout.str()
    # (This plugin's --bench and --bench-*; pytest-benchmark's --benchmark-* are its own.)
    options = set(re.findall(r"(?<![\w-])(--bench(?:-[\w-]+)?)(?![\w-])", help_text))
    ini_type = r"\((?:bool|string|args|linelist|paths|int|float)\):"
    ini_keys = set(re.findall(rf"^\s+(bench\w*) {ini_type}", help_text, flags=re.M))
    assert "--bench-compare" in options
    assert {"bench", "bench_files", "bench_store"} <= ini_keys
    page = (DOCS / "reference" / "options.md").read_text()
    assert sorted(o for o in options if f"`{o}" not in page) == []
    assert sorted(k for k in ini_keys if f"`{k}`" not in page) == []


def test_the_options_reference_is_generated_from_the_option_table() -> None:
    # Each option is declared once (_plugin/options/table.py); the page's tables are rendered
    # from it: after changing an entry, `python -m pytest_benchsdk._plugin.options.reference
    # docs/reference/options.md` rewrites them.
    from pytest_benchsdk._plugin.options.reference import option_usage, update_page
    from pytest_benchsdk._plugin.options.table import OPTIONS

    page = (DOCS / "reference" / "options.md").read_text()
    assert update_page(page) == page
    # Entry by entry (a failure names the entry): each option's row and each ini key's row.
    rows = {line.split(" | ")[0].removeprefix("| ") for line in page.splitlines()}
    for option in OPTIONS:
        usage = option_usage(option).replace("|", "\\|")
        assert not option.flags or usage in rows, option.name
        assert option.ini is None or f"`{option.ini}`" in rows, option.name


def test_the_store_schema_reference_names_every_table_and_column(tmp_path: Path) -> None:
    import sqlite3

    from pytest_benchsdk import ResultStore

    path = tmp_path / "store.sqlite3"
    ResultStore(path).close()
    page = (DOCS / "reference" / "store.md").read_text()
    schema = page[page.index("## Schema") :]
    sections = dict(re.findall(r"^### `(\w+)`\n(.*?)(?=^### |\Z)", schema, flags=re.M | re.S))
    with sqlite3.connect(path) as conn:
        tables = [
            name
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith("sqlite_")
        ]
        assert sorted(sections) == sorted(tables)
        for table in tables:
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            documented = set(re.findall(r"`(\w+)`", sections[table]))
            assert [c for c in columns if c not in documented] == [], table
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    assert f"schema version {version} " in schema


def test_every_repository_path_the_docs_and_changelog_name_exists() -> None:
    # `tests/...`, `benchmarks/...`, `examples/...`, `docs/...` in backticks are files of this
    # repository (a moved file must not leave its old path behind in the text).
    texts = [*PAGES, ROOT / "CHANGELOG.md"]
    pattern = re.compile(r"`(?:python )?((?:tests|benchmarks|examples|docs|\.ci)/[\w./-]*)")
    missing = {
        f"{text.relative_to(ROOT)}: {path}"
        for text in texts
        for path in pattern.findall(text.read_text())
        if not (ROOT / path.rstrip(".")).exists()
    }
    assert sorted(missing) == []


def test_upstream_is_cited_by_what_it_is_not_by_section_numbers() -> None:
    # Users do not have the reference file that "§8.3" points into.
    texts = [*PAGES, ROOT / "CHANGELOG.md"]
    cited = [f"{t.relative_to(ROOT)}" for t in texts if re.search(r"§\s*\d", t.read_text())]
    assert cited == []


def _public_docstrings() -> list[tuple[str, str]]:
    """Every docstring the API pages render: the public modules' and their members'."""
    import importlib
    import inspect

    api = DOCS / "reference" / "api"
    names = re.findall(r"automodule:: ([\w.]+)", "".join(p.read_text() for p in api.glob("*.md")))
    found: list[tuple[str, str]] = []
    for name in names:
        module = importlib.import_module(name)
        found.append((name, inspect.getdoc(module) or ""))
        for attr, value in vars(module).items():
            if getattr(value, "__module__", None) != name:
                continue
            found.append((f"{name}.{attr}", inspect.getdoc(value) or ""))
            for member, inner in vars(value).items() if inspect.isclass(value) else ():
                found.append((f"{name}.{attr}.{member}", inspect.getdoc(inner) or ""))
    return found


@pytest.mark.slow
def test_the_api_pages_cite_no_section_numbers() -> None:
    docstrings = _public_docstrings()
    assert len(docstrings) > 100
    cited = [name for name, doc in docstrings if re.search(r"§\s*\d", doc)]
    assert cited == []


def test_the_architecture_listing_is_the_tree() -> None:
    # docs/development.md lists every module under its area (tests/project/test_architecture.py
    # holds the areas and their import rules): a module added, moved or removed must show there.
    sys.path.insert(0, str(Path(__file__).parent))
    from test_architecture import AREAS, ROOT

    text = (DOCS / "development.md").read_text()
    block = text[text.index("## Architecture") :].split("```")[1]
    listed: dict[str, set[str]] = {}
    area = ""
    for line in block.splitlines():
        if not line.startswith(" ") and " — " in line:
            area = line.split(" — ")[0]
        elif line.startswith("    ") and not line.strip().startswith("may import:"):
            names = re.sub(r"[()]", " ", line).split()
            listed.setdefault(area, set()).update(names)
    expected: dict[str, set[str]] = {}
    for name, prefixes in AREAS.items():
        for prefix in prefixes:
            rel = prefix.removeprefix("pytest_benchsdk.").replace(".", "/")
            folder = ROOT / rel
            if folder.is_dir():
                expected.setdefault(name, set()).add(f"{rel}/")
                for path in folder.rglob("*.py"):
                    if path != folder / "__init__.py":
                        sub = str(path.relative_to(folder).with_suffix(""))
                        expected[name].add(sub.replace("/__init__", "/"))
            else:
                expected.setdefault(name, set()).add(f"{rel}.py")
    assert listed == expected
