"""``pytest-benchsdk`` (also ``python -m pytest_benchsdk``): the results store without a pytest
session — list runs, export records, merge the stores of CI shards, compare two runs, show a
run's summary, write an HTML report, follow a benchmark's history and its change points, name
baselines. Three more commands hand over to their own modules, imported only when they run:
``platform`` (upstream ``bench``'s platform commands, :mod:`pytest_benchsdk.cli._platform`),
``run`` (upstream ``bench run``: a bench file without pytest, :mod:`pytest_benchsdk.runner`) and
``init`` (a starter project, :mod:`pytest_benchsdk.cli._scaffold`). ``store check`` and
``store recover`` check a store and salvage a damaged one into a new file.

Exit status: 0 on success, 1 when ``compare --fail-on-regression`` finds a regression or
``store check`` finds damage, 2 for a usage error (bad arguments, no store, an unknown run id)
and for a store that cannot be used (a damaged one included: one line says so and what to do).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, ParamSpec, TextIO, cast

from pytest_benchsdk._base.defaults import DEFAULT_STORE
from pytest_benchsdk._views.escape import TerminalStream
from pytest_benchsdk._views.exports import EXPORT_FORMATS
from pytest_benchsdk.cli._store import (
    UsageError,
    cli_store,
    cmd_baseline_list,
    cmd_baseline_rm,
    cmd_baseline_set,
    cmd_compare,
    cmd_export,
    cmd_history,
    cmd_merge,
    cmd_report,
    cmd_runs,
    cmd_show,
    cmd_store_check,
    cmd_store_recover,
)
from pytest_benchsdk.results import DEFAULT_HISTORY_LIMIT
from pytest_benchsdk.store import StoreError

__all__ = ["build_parser", "main"]

PROG = "pytest-benchsdk"

STORE_HELP = (
    "the results store (default: bench_store of the pytest ini file, else "
    f"{DEFAULT_STORE} under the rootdir; see the docs' CLI reference)"
)

_EPILOG = """\
examples:
  pytest-benchsdk runs --benchmark sandbox --limit 5
  pytest-benchsdk export 3f2a9c --format csv -o records.csv
  pytest-benchsdk export 3f2a9c --format bmf -o bencher.json
  pytest-benchsdk merge shard-*/benchsdk.sqlite3 -o merged.sqlite3
  pytest-benchsdk --store merged.sqlite3 report -o report.html
  pytest-benchsdk compare 3f2a9c 81be07 --fail-on-regression
  pytest-benchsdk show 81be07
  pytest-benchsdk history demo --participant e2b --metric tti_ms
  pytest-benchsdk baseline set main 81be07
  pytest-benchsdk store check
  pytest-benchsdk store recover -o recovered.sqlite3
  pytest-benchsdk platform runs list my-benchmark --json
  pytest-benchsdk run bench_sandbox.py --iterations 5 --dry-run
  pytest-benchsdk init my-benchmarks

A RUN is a stored run id or any unique prefix of one (as `runs` lists them).
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="The pytest-benchsdk results store without a pytest session.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--store", default=None, metavar="PATH", help=STORE_HELP)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    def command(name: str, help: str, epilog: str) -> argparse.ArgumentParser:
        parser = commands.add_parser(
            name,
            help=help,
            description=help,
            epilog=f"example:\n  {epilog}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        return _with_store_option(parser)

    _add_run_commands(command)
    _add_baseline_command(command)
    _add_store_command(command)
    _list_own_parsers(commands)
    return parser


#: Adds a command to the parser: its name, help and example.
_Command = Callable[[str, str, str], argparse.ArgumentParser]


def _add_run_commands(command: _Command) -> None:
    """The commands on stored runs: runs, export, merge, compare, show, report, history."""
    runs = command("runs", "list the stored runs, newest first", "pytest-benchsdk runs --limit 5")
    runs.add_argument("--benchmark", metavar="SLUG", help="only the runs of this benchmark")
    runs.add_argument("--limit", type=int, default=20, metavar="N", help="at most N (default 20)")
    runs.set_defaults(handler=cmd_runs)

    export = command(
        "export",
        "a run's records as upstream's wire JSON (per participant) or as CSV (one row each); "
        "or its statistics for github-action-benchmark (gab: smaller is better, gab-bigger), "
        "Bencher (bmf) or pytest-benchmark's readers (pytest-benchmark)",
        "pytest-benchsdk export 3f2a9c --format csv -o records.csv\n"
        "  pytest-benchsdk export 3f2a9c --format gab -o benchmark.json",
    )
    export.add_argument("run", metavar="RUN", help="run id or unique prefix")
    export.add_argument("--format", choices=("json", "csv", *EXPORT_FORMATS), default="json")
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    export.set_defaults(handler=cmd_export)

    merge = command(
        "merge",
        "merge stores (e.g. CI shards): runs with the same run key and benchmark become one "
        "run, scored as if one process ran them; other runs are copied",
        "pytest-benchsdk merge shard-*/benchsdk.sqlite3 -o merged.sqlite3",
    )
    merge.add_argument("stores", nargs="+", metavar="STORE", help="stores to read")
    merge.add_argument(
        "-o", "--output", required=True, metavar="STORE", help="store to write (may be an input)"
    )
    merge.set_defaults(handler=cmd_merge)

    compare = command(
        "compare",
        "compare two stored runs as --bench-compare does",
        "pytest-benchsdk compare 3f2a9c 81be07 --fail-on-regression",
    )
    compare.add_argument("base", metavar="BASE", help="the baseline run")
    compare.add_argument("current", metavar="CURRENT", help="the run compared with it")
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit status 1 when any verdict is 'regressed'",
    )
    compare.add_argument(
        "--compare-on",
        metavar="METRIC[,METRIC]",
        default="",
        help="the metrics whose verdicts count, as --bench-compare-on (default: those the "
        "session's comparison judges)",
    )
    compare.set_defaults(handler=cmd_compare)

    show = command(
        "show", "a run's summary as the session printed it", "pytest-benchsdk show 81be07"
    )
    show.add_argument("run", metavar="RUN", help="run id or unique prefix")
    show.add_argument(
        "-v", "--verbose", action="count", default=0, help="also the steps' latencies"
    )
    show.set_defaults(handler=cmd_show)

    report = command(
        "report",
        "an HTML report of runs (default: the newest run of each benchmark); needs plotly",
        "pytest-benchsdk report -o report.html",
    )
    report.add_argument("runs", nargs="*", metavar="RUN", help="run ids or unique prefixes")
    report.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file")
    report.set_defaults(handler=cmd_report)

    history = command(
        "history",
        "a benchmark's complete runs, oldest first: per participant and metric the median and "
        "p95 each run printed, and the change points found in each series (e-divisive means "
        "with a permutation test)",
        "pytest-benchsdk history demo --participant e2b --metric tti_ms",
    )
    history.add_argument(
        "benchmark", nargs="?", metavar="BENCHMARK", help="its slug (default: every benchmark)"
    )
    history.add_argument(
        "--participant", action="append", metavar="P", help="only this participant (repeatable)"
    )
    history.add_argument(
        "--metric", action="append", metavar="M", help="only this metric key (repeatable)"
    )
    history.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_HISTORY_LIMIT,
        metavar="N",
        help=f"the newest N complete runs (default {DEFAULT_HISTORY_LIMIT})",
    )
    history.add_argument("--json", action="store_true", help="the series as JSON")
    history.add_argument(
        "--restart",
        nargs="?",
        const="next",
        metavar="RUN",
        help="start BENCHMARK's history afresh: with its next run, or with RUN (earlier runs "
        "stay in the store but leave the between-run noise and the history)",
    )
    history.set_defaults(handler=cmd_history)


def _add_baseline_command(command: _Command) -> None:
    baseline = command(
        "baseline",
        "named baselines (--bench-compare=NAME): list them, move a name to a run, remove one",
        "pytest-benchsdk baseline set main 81be07",
    )
    actions = baseline.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    actions.required = True
    listing = actions.add_parser("list", help="the names, per benchmark, and the runs they name")
    listing.add_argument("--benchmark", metavar="SLUG", help="only this benchmark's names")
    _with_store_option(listing).set_defaults(handler=cmd_baseline_list)
    setting = actions.add_parser(
        "set", help="let NAME stand for RUN among its benchmark's runs (moved if it named another)"
    )
    setting.add_argument("name", metavar="NAME", help="e.g. main or release/1.2")
    setting.add_argument("run", metavar="RUN", help="run id or unique prefix")
    setting.add_argument(
        "--force",
        action="store_true",
        help="name RUN even when it is not complete (interrupted, a -k or node-id subset): "
        "comparisons with it see only what it ran",
    )
    _with_store_option(setting).set_defaults(handler=cmd_baseline_set)
    removing = actions.add_parser("rm", help="forget NAME (of every benchmark, or of one)")
    removing.add_argument("name", metavar="NAME")
    removing.add_argument("--benchmark", metavar="SLUG", help="only this benchmark's NAME")
    _with_store_option(removing).set_defaults(handler=cmd_baseline_rm)


def _add_store_command(command: _Command) -> None:
    store = command(
        "store",
        "the store file itself: check it with SQLite's integrity check, or salvage what can "
        "be read of a damaged one into a new file",
        "pytest-benchsdk store check\n"
        "  pytest-benchsdk --store .benchmarks/benchsdk.sqlite3 store recover -o recovered.sqlite3",
    )
    store_actions = store.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    store_actions.required = True
    checking = store_actions.add_parser(
        "check",
        help="SQLite's integrity check of the store (reads only): exit status 0 when it is "
        "healthy, 1 when it is damaged",
    )
    _with_store_option(checking).set_defaults(handler=cmd_store_check)
    recovering = store_actions.add_parser(
        "recover",
        help="copy what can be read of the store (and of the journals beside it) into a NEW "
        "file; the store itself is only read",
    )
    recovering.add_argument(
        "-o", "--output", required=True, metavar="NEW", help="the new store (must not exist)"
    )
    _with_store_option(recovering).set_defaults(handler=cmd_store_recover)


def _list_own_parsers(commands: argparse._SubParsersAction[_Parser]) -> None:
    """The commands with parsers of their own, listed for ``--help`` only: :func:`main` hands
    them to their own parsers before argparse runs."""
    commands.add_parser(
        "platform",
        help="upstream bench's platform commands: auth, org, benchmarks, runs, results, "
        "iterations, artifacts, logs, export (pytest-benchsdk platform --help)",
        add_help=False,
    )
    commands.add_parser(
        "run",
        help="run a bench file without pytest, with upstream bench run's flags "
        "(pytest-benchsdk run FILE --dry-run)",
        add_help=False,
    )
    commands.add_parser(
        "check",
        help="check a bench file without running it, as upstream bench check "
        "(pytest-benchsdk check FILE --dry-run)",
        add_help=False,
    )
    commands.add_parser(
        "init",
        help="write a starter benchmark project into DIR (pytest-benchsdk init --help)",
        add_help=False,
    )


def _with_store_option(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` taking ``--store`` after its command too; SUPPRESS keeps one given before
    the command when none is given after it."""
    parser.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="the results store, as --store before the command",
    )
    return parser


_P = ParamSpec("_P")


def _escaping_terminal_output(command: Callable[_P, int]) -> Callable[_P, int]:
    """``command`` with what it writes to a terminal escaped: a name in the store may hold an
    escape sequence (see :class:`~pytest_benchsdk._views.escape.TerminalStream`); a pipe or a
    file gets the data as it is."""

    @functools.wraps(command)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> int:
        streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = (_for_terminal(stream) for stream in streams)
        try:
            return command(*args, **kwargs)
        finally:
            sys.stdout, sys.stderr = streams

    return run


def _for_terminal(stream: TextIO) -> TextIO:
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        terminal = False
    return cast(TextIO, TerminalStream(stream)) if terminal else stream


@_escaping_terminal_output
def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    # ``--store PATH`` before the command is accepted for every command, so that a shell
    # alias with it works for all of them; ``platform`` and ``init`` use no store.
    try:
        store, after_store = _leading_store(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    # Three commands with their own parsers, imported only when they run: ``platform`` and
    # ``run`` (upstream bench's commands, which parse their argv as upstream does) and ``init``.
    if after_store[:1] == ["platform"]:
        from pytest_benchsdk.cli import _platform as platform_cli

        return platform_cli.main(after_store[1:])
    if after_store[:1] in (["run"], ["check"]):
        from pytest_benchsdk import runner

        # After the file, so that a --store after it (the more specific one) wins; ``check``
        # stores nothing.
        given = ["--store", store] if store is not None and after_store[0] == "run" else []
        return runner.main([*after_store[:2], *given, *after_store[2:]])
    if after_store[:1] == ["init"]:
        from pytest_benchsdk.cli import _scaffold

        return _scaffold.main(after_store[1:])
    parser = build_parser()
    try:
        namespace = parser.parse_args(args)
        namespace.store_location = cli_store(namespace.store)
        namespace.store = namespace.store or str(namespace.store_location.path)
        result: int = namespace.handler(namespace)
    except (UsageError, StoreError) as exc:
        # StoreError: the store failed under a command (found damaged by a read, say).
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:
        return 0
    return result


def _leading_store(args: Sequence[str]) -> tuple[str | None, list[str]]:
    """The ``--store PATH`` (or ``--store=PATH``) options before the command (the last one
    wins) and the arguments after them."""
    store: str | None = None
    index = 0
    while index < len(args):
        flag, eq, inline = args[index].partition("=")
        if flag != "--store":
            break
        if eq:
            value, index = inline, index + 1
        elif index + 1 < len(args):
            value, index = args[index + 1], index + 2
        else:
            value, index = "", index + 1
        if not value:
            raise UsageError("argument --store: expected one argument")
        store = value
    return store, list(args[index:])
