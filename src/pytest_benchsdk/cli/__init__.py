"""``pytest-benchsdk`` (also ``python -m pytest_benchsdk``): the results store without a pytest
session — list runs, export records, merge the stores of CI shards, compare two runs, show a
run's summary, write an HTML report, follow a benchmark's history and its change points, name
baselines. Three more commands hand over to their own modules, imported only when they run:
``platform`` (upstream ``bench``'s platform commands, :mod:`pytest_benchsdk.cli._platform`),
``run`` (upstream ``bench run``: a bench file without pytest, :mod:`pytest_benchsdk.runner`) and
``init`` (a starter project, :mod:`pytest_benchsdk.cli._scaffold`).

Exit status: 0 on success, 1 when ``compare --fail-on-regression`` finds a regression, 2 for a
usage error (bad arguments, no store, an unknown run id).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pytest_benchsdk._base.defaults import DEFAULT_STORE
from pytest_benchsdk._base.js import js_json
from pytest_benchsdk._views.exports import EXPORT_FORMATS, export_text, gab_entries
from pytest_benchsdk._views.text import (
    comparison_lines,
    history_lines,
    name_cell,
    summary_lines,
    table,
    terminal_text,
    title_line,
)
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import (
    DEFAULT_HISTORY_LIMIT,
    BaselineRefused,
    CompareRef,
    RunRefError,
    RunSetup,
    analyse,
    check_baseline_name,
    find_baseline,
    find_run,
    merge_stores,
    named_baselines,
    run_history,
    save_baseline,
    short_run_id,
    stored_spec,
    stored_status,
    stored_summary,
)
from pytest_benchsdk.store import (
    ResultStore,
    StoredRun,
    StoreError,
    StoreReadOnlyError,
)

__all__ = ["main"]

PROG = "pytest-benchsdk"
_REPORT_MISSING = "report needs plotly: pip install 'pytest-benchsdk[report]'"

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
  pytest-benchsdk platform runs list my-benchmark --json
  pytest-benchsdk run bench_sandbox.py --iterations 5 --dry-run
  pytest-benchsdk init my-benchmarks

A RUN is a stored run id or any unique prefix of one (as `runs` lists them).
"""


class UsageError(Exception):
    """A problem with the command line or the store: printed, exit status 2."""


# --- helpers -------------------------------------------------------------------------------------


def _open_store(path: str, *, create: bool = False) -> ResultStore:
    """The store at ``path``; one that cannot be written (a read-only file or directory) is
    opened for reading, unless it is to be written (``create``: merge's output)."""
    if not create and not Path(path).is_file():
        raise UsageError(f"no results store at {path} (--store PATH; default {DEFAULT_STORE})")
    try:
        return ResultStore(path)
    except StoreReadOnlyError as exc:
        if create:
            raise UsageError(str(exc)) from None
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        store = ResultStore(path, read_only=True)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if store.read_only_note:
        print(f"pytest-benchsdk: warning: {store.read_only_note}", file=sys.stderr)
    return store


def short_id(run_id: str) -> str:
    return short_run_id(run_id)


def resolve_run(store: ResultStore, ref: str) -> StoredRun:
    """The run with id ``ref``, or the one run whose id starts with it; else a usage error
    naming the closest ids."""
    try:
        return find_run(store, ref)
    except RunRefError as exc:
        raise UsageError(str(exc)) from None


def _write_text(text: str, output: str | None) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None


def _participant_list(names: Sequence[str], width: int = 40) -> str:
    text = ",".join(names)
    return text if len(text) <= width else text[: width - 1] + "…"


# --- runs ----------------------------------------------------------------------------------------


def cmd_runs(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        runs = store.list_runs(limit=args.limit, benchmark_slug=args.benchmark)
        statuses = {run.run_id: stored_status(store, run) for run in runs}
    if not runs:
        which = f" of benchmark {args.benchmark}" if args.benchmark else ""
        print(f"no runs{which} in {args.store}")
        return 0
    rows = [["id", "benchmark", "started", "status", "participants", "records", "git", "key"]]
    for run in runs:
        rows.append(
            [
                short_id(run.run_id),
                name_cell(run.benchmark_slug),
                run.started_at,
                statuses[run.run_id].text() + (" (dry run)" if run.dry_run else ""),
                terminal_text(_participant_list(run.participants)),
                str(run.record_count),
                (run.environment.git_sha or "-")[:10],
                terminal_text(run.run_key) if run.run_key else "-",
            ]
        )
    print("\n".join(table(rows, indent="")))
    return 0


# --- export --------------------------------------------------------------------------------------


#: What a spreadsheet reads as the start of a formula (OWASP's CSV injection list).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(text: str) -> str:
    """A text cell a spreadsheet shows as text: one starting like a formula gets a leading
    ``'`` (``=HYPERLINK(...)`` → ``'=HYPERLINK(...)``), as OWASP recommends for CSV."""
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A record as CSV cells: nested objects as dotted keys, lists as JSON, ``None`` as an
    empty cell, booleans as ``true``/``false``, numbers as JSON writes them, text through
    :func:`spreadsheet_text` (numbers stay numbers: ``-5`` is not prefixed)."""
    cells: dict[str, str] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            nested = flatten(item, name + ".")
            cells.update(nested if nested else {name: "{}"})
        elif item is None:
            cells[name] = ""
        elif isinstance(item, str):
            cells[name] = spreadsheet_text(item)
        else:
            cells[name] = js_json(item)
    return cells


def record_row(participant: str, record: TaskRecord) -> dict[str, str]:
    """One record as a CSV row: :func:`flatten` of its wire form, each step's latency and
    status in its own columns (``steps.create.latencyMs``; a second invocation of a step is
    ``steps.create[2].latencyMs``) instead of one JSON column."""
    wire = record.to_wire()
    steps = wire.pop("steps", None) or []
    row = {"participant": spreadsheet_text(participant), **flatten(wire)}
    seen: dict[str, int] = {}
    for step in steps:
        name = str(step.get("name"))
        seen[name] = seen.get(name, 0) + 1
        column = f"steps.{name}" if seen[name] == 1 else f"steps.{name}[{seen[name]}]"
        latency = step.get("latencyMs")
        row[f"{column}.latencyMs"] = "" if latency is None else js_json(latency)
        row[f"{column}.status"] = spreadsheet_text(str(step.get("status") or ""))
    return row


def cmd_export(args: argparse.Namespace) -> int:
    if args.format in EXPORT_FORMATS:
        with _open_store(args.store) as store:
            run = resolve_run(store, args.run)
            summary = stored_summary(store, run)
        _write_text(export_text(args.format, [summary]), args.output)
        if args.format == "gab" and (bigger := gab_entries([summary], bigger=True)):
            print(
                f"note: {len(bigger)} bigger-is-better entries (scores, higher-better metrics) "
                "are in --format gab-bigger (github-action-benchmark's customBiggerIsBetter)",
                file=sys.stderr,
            )
        return 0
    with _open_store(args.store) as store:
        run = resolve_run(store, args.run)
        participants = store.participant_records(run.run_id)
    if args.format == "json":
        document = [
            {"participant": pr.participant, "records": [r.to_wire() for r in pr.records]}
            for pr in participants
        ]
        _write_text(js_json(document, indent=2) + "\n", args.output)
        return 0
    rows = [record_row(pr.participant, record) for pr in participants for record in pr.records]
    header = list(dict.fromkeys(key for row in rows for key in row)) or ["participant"]
    buffer = io.StringIO()
    # CRLF (RFC 4180, the csv module's default): a cell holding a CR or LF is then quoted,
    # so no text can break a row.
    writer = csv.DictWriter(buffer, fieldnames=header, restval="", lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    _write_text(buffer.getvalue(), args.output)
    return 0


# --- merge ---------------------------------------------------------------------------------------


def cmd_merge(args: argparse.Namespace) -> int:
    # A store given twice is read once.
    paths = {str(Path(path).resolve()): path for path in reversed(args.stores)}
    inputs = [_open_store(path) for path in reversed(paths.values())]
    try:
        out = _open_store(args.output, create=True)
    except UsageError:
        for store in inputs:
            store.close()
        raise
    try:
        result = merge_stores(inputs, out)
    finally:
        for store in inputs:
            store.close()
        out.close()
    for merged in result.merged:
        run = merged.run
        print(
            f"{merged.benchmark_slug} run key {terminal_text(merged.run_key)}: "
            f"{merged.shards} shard(s) -> run {short_id(run.run_id)} "
            f"({len(run.participants)} participants, {run.record_count} records)"
        )
        for note in merged.notes:
            print(f"  {note}")
    print(
        f"merged {len(result.merged)} keyed run(s) and copied {result.copied} run(s) without a "
        f"run key into {args.output}"
    )
    return 0


# --- compare -------------------------------------------------------------------------------------


def cmd_compare(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        base = resolve_run(store, args.base)
        current = resolve_run(store, args.current)
        setup = RunSetup.of(current)
        # With the between-run noise of the runs before CURRENT, as --bench-compare has it.
        baseline = find_baseline(
            CompareRef("run", args.base, run_id=base.run_id), store, setup, current.run_id
        )
        records = tuple(pr for pr in store.participant_records(current.run_id) if pr.records)
        spec = stored_spec(store, current)
        scored_elsewhere = spec is None and bool(store.scores(current.run_id))
        summary = stored_summary(store, current)
    analyses = analyse(
        summary.participants,
        samples={},
        records=records,
        spec=spec,
        warnings=False,
        baseline=baseline,
        setup=setup.describe(current.environment),
    )
    print(title_line(summary, f"run {current.run_id}"))
    if scored_elsewhere:
        print("  (scored by on_score, which the store does not keep: comparing the latency)")
    print("\n".join(comparison_lines(analyses.comparison, analyses.comparison_note)))
    for error in analyses.errors:
        print(f"ERROR {terminal_text(error)}")
    regressions = analyses.comparison.regressions if analyses.comparison is not None else ()
    if regressions and args.fail_on_regression:
        for row in regressions:
            print(
                f"ERROR regressed (--fail-on-regression): {current.benchmark_slug}: "
                f"{terminal_text(row.line())}"
            )
        return 1
    return 0


# --- show ----------------------------------------------------------------------------------------


def show_lines(store: ResultStore, run: StoredRun, *, verbose: int = 0) -> list[str]:
    """The run's summary as the session printed it, from what the store kept."""
    summary = stored_summary(store, run)
    head = f"  Run {run.run_id}, stored {run.started_at}"
    if run.run_key:
        head += f", run key {terminal_text(run.run_key)}"
    if run.dry_run:
        head += " (dry run)"
    return [title_line(summary, summary.file), head, *summary_lines(summary, verbose=verbose)]


def cmd_show(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        run = resolve_run(store, args.run)
        print("\n".join(show_lines(store, run, verbose=args.verbose)))
    return 0


# --- report --------------------------------------------------------------------------------------


def newest_per_benchmark(store: ResultStore) -> list[str]:
    """The id of the newest run of each benchmark, newest first."""
    ids: dict[str, str] = {}
    for run in store.list_runs(limit=1_000_000):
        ids.setdefault(run.benchmark_slug, run.run_id)
    return list(ids.values())


def cmd_report(args: argparse.Namespace) -> int:
    try:
        from pytest_benchsdk.report import write_report  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise UsageError(_REPORT_MISSING) from None
    with _open_store(args.store) as store:
        run_ids = [resolve_run(store, ref).run_id for ref in args.runs] or newest_per_benchmark(
            store
        )
        if not run_ids:
            raise UsageError(f"no runs in {args.store} to report on")
        try:
            write_report(store, run_ids, args.output)
        except ImportError:
            raise UsageError(_REPORT_MISSING) from None
    print(f"report of {len(run_ids)} run(s) written to {args.output}")
    return 0


# --- history -------------------------------------------------------------------------------------


def cmd_history(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UsageError(f"--limit expects an integer >= 1 (got {args.limit})")
    with _open_store(args.store) as store:
        slugs = list(dict.fromkeys(run.benchmark_slug for run in store.list_runs(limit=1_000_000)))
        if args.benchmark is not None:
            if args.benchmark not in slugs:
                known = f" (benchmarks: {', '.join(slugs)})" if slugs else " (it holds no runs)"
                raise UsageError(f"no runs of benchmark {args.benchmark} in {args.store}{known}")
            slugs = [args.benchmark]
        histories = [
            run_history(
                store,
                slug,
                participants=args.participant or None,
                metrics=args.metric or None,
                limit=args.limit,
            )
            for slug in slugs
        ]
    found = [h for h in histories if h is not None]
    if args.json:
        print(json.dumps([h.to_json() for h in found], indent=2, ensure_ascii=False))
        return 0
    if not found:
        print(f"no complete runs in {args.store} yet")
        return 0
    blocks = []
    for history in found:
        lines = history_lines(history)
        if not history.series:
            lines.append("  No series matches --participant/--metric.")
        blocks.append("\n".join(lines))
    print("\n\n".join(blocks))
    return 0


# --- baseline ------------------------------------------------------------------------------------


def cmd_baseline_list(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        named = named_baselines(store, args.benchmark)
    if not named:
        print(f"no baseline names in {args.store} (pytest --bench-save NAME, or baseline set)")
        return 0
    rows = [["name", "benchmark", "run", "started", "status", "named at"]]
    for entry, run, status in named:
        rows.append(
            [
                name_cell(entry.name),
                name_cell(entry.benchmark_slug),
                short_id(entry.run_id),
                run.started_at if run is not None else "(gone)",
                status.text() if status is not None else "-",
                entry.updated_at,
            ]
        )
    print("\n".join(table(rows, indent="")))
    return 0


def cmd_baseline_set(args: argparse.Namespace) -> int:
    try:
        name = check_baseline_name(args.name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    with _open_store(args.store) as store:
        run = resolve_run(store, args.run)
        try:
            line = save_baseline(store, name, run, stored_status(store, run), force=args.force)
        except BaselineRefused as exc:
            raise UsageError(str(exc)) from None
    print(line)
    return 0


def cmd_baseline_rm(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        gone = store.delete_baseline(args.name, args.benchmark)
    if not gone:
        which = f" of benchmark {args.benchmark}" if args.benchmark else ""
        raise UsageError(f"no baseline {args.name}{which} in {args.store}")
    print(f"removed baseline {args.name} ({gone} benchmark(s))")
    return 0


# --- command line --------------------------------------------------------------------------------


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
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        metavar="PATH",
        help=f"the results store (default: {DEFAULT_STORE})",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    def command(name: str, help: str, epilog: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=help,
            description=help,
            epilog=f"example:\n  {epilog}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    runs = command("runs", "list the stored runs, newest first", "pytest-benchsdk runs --limit 5")
    runs.add_argument("--benchmark", metavar="SLUG", help="only the runs of this benchmark")
    runs.add_argument("--limit", type=int, default=20, metavar="N", help="at most N (default 20)")
    runs.set_defaults(handler=cmd_runs)

    export = command(
        "export",
        "a run's records as upstream's wire JSON (per participant) or as CSV (one row each); "
        "or its statistics for github-action-benchmark (gab: smaller is better, gab-bigger) "
        "or Bencher (bmf)",
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
    history.set_defaults(handler=cmd_history)

    baseline = command(
        "baseline",
        "named baselines (--bench-compare=NAME): list them, move a name to a run, remove one",
        "pytest-benchsdk baseline set main 81be07",
    )
    actions = baseline.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    actions.required = True
    listing = actions.add_parser("list", help="the names, per benchmark, and the runs they name")
    listing.add_argument("--benchmark", metavar="SLUG", help="only this benchmark's names")
    listing.set_defaults(handler=cmd_baseline_list)
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
    setting.set_defaults(handler=cmd_baseline_set)
    removing = actions.add_parser("rm", help="forget NAME (of every benchmark, or of one)")
    removing.add_argument("name", metavar="NAME")
    removing.add_argument("--benchmark", metavar="SLUG", help="only this benchmark's NAME")
    removing.set_defaults(handler=cmd_baseline_rm)
    # Listed for --help only: main() hands these to their own parsers before argparse runs.
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
        "init",
        help="write a starter benchmark project into DIR (pytest-benchsdk init --help)",
        add_help=False,
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Three commands with their own parsers, imported only when they run: ``platform`` and
    # ``run`` (upstream bench's commands, which parse their argv as upstream does) and ``init``.
    if args[:1] == ["platform"]:
        from pytest_benchsdk.cli import _platform as platform_cli

        return platform_cli.main(args[1:])
    if args[:1] == ["run"]:
        from pytest_benchsdk import runner

        return runner.main(args)
    if args[:1] == ["init"]:
        from pytest_benchsdk.cli import _scaffold

        return _scaffold.main(args[1:])
    parser = build_parser()
    try:
        namespace = parser.parse_args(args)
        result: int = namespace.handler(namespace)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:
        return 0
    return result
