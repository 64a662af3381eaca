"""The store commands of ``pytest-benchsdk``: ``runs``, ``export``, ``merge``, ``compare``,
``show``, ``report``, ``history``, ``baseline`` and ``store``. Each parses nothing (the parser is
:func:`pytest_benchsdk.cli.build_parser`'s), opens the store, calls the results package and
prints; :class:`UsageError` is exit status 2."""

from __future__ import annotations

import argparse
import csv
import io
import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_benchsdk._base.defaults import DEFAULT_STORE
from pytest_benchsdk._base.files import write_atomically
from pytest_benchsdk._base.js import js_json
from pytest_benchsdk._base.storepath import StoreLocation, find_inifile, resolve_store
from pytest_benchsdk._views.escape import terminal_text
from pytest_benchsdk._views.exports import EXPORT_FORMATS, export_text, gab_entries
from pytest_benchsdk._views.text import (
    comparison_lines,
    history_lines,
    name_cell,
    summary_lines,
    table,
    title_line,
)
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import (
    BaselineRefused,
    CompareRef,
    ComparisonOptions,
    RunRefError,
    RunSetup,
    analyse,
    check_baseline_name,
    find_baseline,
    find_run,
    merge_stores,
    named_baselines,
    ran_text,
    run_history,
    run_span,
    save_baseline,
    short_run_id,
    start_history,
    stored_spec,
    stored_status,
    stored_summary,
    utc_text,
)
from pytest_benchsdk.store import (
    ResultStore,
    StoredRun,
    StoreError,
    StoreReadOnlyError,
    check_store,
    recover_store,
)

_REPORT_MISSING = "report needs plotly: pip install 'pytest-benchsdk[report]'"


class UsageError(Exception):
    """A problem with the command line or the store: printed, exit status 2."""


# --- helpers -------------------------------------------------------------------------------------


def cli_store(given: str | None) -> StoreLocation:
    """The commands' store: ``--store`` (relative to the current directory), else the
    ``bench_store`` of the ini file pytest would use here, else the default under its rootdir,
    by the plugin's own rule (:func:`~pytest_benchsdk._base.storepath.resolve_store`)."""
    here = Path.cwd()
    ini = None if given else find_inifile(here)
    if not given and ini is None:
        # As before the ini was read: the relative default, as messages print it.
        return StoreLocation(
            Path(DEFAULT_STORE), f"the default: no pytest ini file in {here} or above sets one"
        )
    return resolve_store(
        given,
        flag="--store",
        given_base=here,
        ini=ini,
        rootdir=ini.directory if ini else here,
        rootdir_words=f"the rootdir {ini.directory}" if ini else None,
    )


def _origin(args: argparse.Namespace) -> str | None:
    location = getattr(args, "store_location", None)
    return location.origin if isinstance(location, StoreLocation) else None


def _missing(path: str, origin: str | None) -> UsageError:
    if origin and origin != "--store":
        return UsageError(
            f"no results store at {path} (the path is {origin}; choose another with --store PATH)"
        )
    return UsageError(f"no results store at {path} (--store PATH; default {DEFAULT_STORE})")


def _open_run_store(args: argparse.Namespace) -> ResultStore:
    """The store the command line names (``args.store``)."""
    return _open_store(args.store, origin=_origin(args))


def _open_store(path: str, *, create: bool = False, origin: str | None = None) -> ResultStore:
    """The store at ``path``; one that cannot be written (a read-only file or directory) is
    opened for reading, unless it is to be written (``create``: merge's output)."""
    if not create and not Path(path).is_file():
        raise _missing(path, origin)
    try:
        store = ResultStore(path)
    except StoreReadOnlyError as exc:
        if create:
            raise UsageError(str(exc)) from None
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    else:
        for line in store.abandoned_lines():
            print(f"pytest-benchsdk: note: {line}", file=sys.stderr)
        return store
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
        write_atomically(Path(output), text)
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None


def _participant_list(names: Sequence[str], width: int = 40) -> str:
    text = ",".join(names)
    return text if len(text) <= width else text[: width - 1] + "…"


# --- runs ----------------------------------------------------------------------------------------


def cmd_runs(args: argparse.Namespace) -> int:
    with _open_run_store(args) as store:
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
                statuses[run.run_id].text()
                + (" (dry run)" if run.dry_run else "")
                + (f" · A/B side {run.knobs['abSide']}" if run.knobs.get("abSide") else ""),
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
        with _open_run_store(args) as store:
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
    with _open_run_store(args) as store:
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
    with _open_run_store(args) as store:
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
        hygiene=None,
        comparison=ComparisonOptions(
            baseline=baseline,
            setup=setup.describe(current.environment),
            compare_on=[key.strip() for key in args.compare_on.split(",") if key.strip()],
        ),
    )
    if analyses.usage_error is not None:
        raise UsageError(f"--compare-on: {analyses.usage_error}")
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
    with _open_run_store(args) as store:
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
    with _open_run_store(args) as store:
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


def _restart_history(args: argparse.Namespace) -> int:
    """``history BENCHMARK --restart [RUN]``: the history starts afresh."""
    if args.benchmark is None:
        raise UsageError(
            "--restart needs the BENCHMARK whose history starts afresh (pytest-benchsdk "
            "history BENCHMARK --restart [RUN])"
        )
    with _open_run_store(args) as store:
        run_id = None
        if args.restart != "next":
            try:
                run_id = find_run(store, args.restart).run_id
            except RunRefError as exc:
                raise UsageError(f"--restart {args.restart}: {exc}") from None
        try:
            line = start_history(store, args.benchmark, run_id)
        except ValueError as exc:
            raise UsageError(f"--restart: {exc}") from None
    print(line)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    if getattr(args, "restart", None) is not None:
        return _restart_history(args)
    if args.limit < 1:
        raise UsageError(f"--limit expects an integer >= 1 (got {args.limit})")
    with _open_run_store(args) as store:
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
    rows = [["name", "benchmark", "run", "ran (UTC)", "status", "saved (UTC)"]]
    with _open_run_store(args) as store:
        named = named_baselines(store, args.benchmark)
        for entry, run, status in named:
            # The run's own iterations, not the session's start (one session opens the runs
            # of all its benchmarks at once).
            ran = "(gone)"
            if run is not None:
                ran = ran_text(run, run_span(store, run.run_id))
                ran = ran.removeprefix("ran ").removesuffix(" UTC")
            rows.append(
                [
                    name_cell(entry.name),
                    name_cell(entry.benchmark_slug),
                    short_id(entry.run_id),
                    ran,
                    status.text() if status is not None else "-",
                    utc_text(entry.updated_at).removesuffix(" UTC"),
                ]
            )
    if not named:
        print(f"no baseline names in {args.store} (pytest --bench-save NAME, or baseline set)")
        return 0
    print("\n".join(table(rows, indent="")))
    return 0


def cmd_baseline_set(args: argparse.Namespace) -> int:
    try:
        name = check_baseline_name(args.name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    with _open_run_store(args) as store:
        run = resolve_run(store, args.run)
        try:
            line = save_baseline(store, name, run, stored_status(store, run), force=args.force)
        except BaselineRefused as exc:
            raise UsageError(str(exc)) from None
    print(line)
    return 0


def cmd_baseline_rm(args: argparse.Namespace) -> int:
    with _open_run_store(args) as store:
        gone = store.delete_baseline(args.name, args.benchmark)
    if not gone:
        which = f" of benchmark {args.benchmark}" if args.benchmark else ""
        raise UsageError(f"no baseline {args.name}{which} in {args.store}")
    print(f"removed baseline {args.name} ({gone} benchmark(s))")
    return 0


# --- store check / recover ------------------------------------------------------------------------


def _need_file(path: str, origin: str | None) -> Path:
    if not Path(path).is_file():
        raise _missing(path, origin)
    return Path(path)


def cmd_store_check(args: argparse.Namespace) -> int:
    path = _need_file(args.store, _origin(args))
    try:
        found = check_store(path)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if found.ok:
        runs = f", {found.runs} run(s)" if found.runs is not None else ""
        print(
            f"{path}: ok (SQLite's integrity check found no problem; schema {found.schema}{runs})"
        )
        if found.journals:
            print(
                f"  {len(found.journals)} journal(s) beside it hold records not committed yet: "
                "the next session or command that opens the store for writing commits them"
            )
        return 0
    print(f"{path}: damaged (SQLite's integrity check):")
    for problem in found.problems:
        print(f"  {terminal_text(problem)}")
    journals = f" and the {len(found.journals)} journal(s) beside it" if found.journals else ""
    print(
        "Nothing more is written to it. Copy what can be read of it"
        f"{journals} into a new file:\n"
        f"  pytest-benchsdk --store {shlex.quote(str(path))} store recover -o NEW.sqlite3"
    )
    return 1


def cmd_store_recover(args: argparse.Namespace) -> int:
    source, target = _need_file(args.store, _origin(args)), Path(args.output)
    try:
        done = recover_store(source, target)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    left: dict[str, list[str]] = {}
    for leftover in done.abandoned:  # a partial store and its -wal / -shm: one line
        base, _, side = str(leftover).partition(".partial")
        left.setdefault(f"{base}.partial", []).append(side)
    for partial, sides in left.items():
        also = [side for side in sides if side]
        with_sides = f" (and its {', '.join(also)})" if also else ""
        print(f"Removed {partial}{with_sides}: a recover that was killed left it (not a store).")
    print(f"Recovered what could be read of {source} into {target} ({source} is left as it was):")
    for name, count in done.copied.items():
        parts = done.damaged_parts.get(name)
        lost = f"; {parts} damaged part(s) could not be read" if parts else ""
        print(f"  {name}: {count:,} row(s){lost}")
    for name, problem in done.unreadable.items():
        print(f"  {name}: could not be read ({terminal_text(problem)})")
    if done.journals:
        print(
            f"  {done.journal_records:,} record(s) not committed to {source} yet, from "
            f"{done.journals} journal(s) beside it"
        )
    if done.rebuilt_runs:
        print(
            f"  {done.rebuilt_runs} run(s) whose own row could not be read, rebuilt from their "
            "records (benchmark 'unknown', status interrupted)"
        )
    new = shlex.quote(str(target))
    print(
        f"Use it: pytest-benchsdk --store {new} runs, or pytest --bench --bench-store {new}.\n"
        f"To use it in place of {source}: move {source} and its -wal and -shm files away, "
        f"then move {target} to {source}."
    )
    return 0


# --- command line --------------------------------------------------------------------------------
