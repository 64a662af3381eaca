"""``pytest-benchsdk`` (also ``python -m pytest_benchsdk``): the results store without a pytest
session — list runs, export records, merge the stores of CI shards, compare two runs, show a
run's summary, write an HTML report. Two more commands hand over to their own modules, imported
only when they run: ``platform`` (upstream ``bench``'s platform commands,
:mod:`pytest_benchsdk.platform_cli`) and ``init`` (a starter project,
:mod:`pytest_benchsdk._scaffold`).

Exit status: 0 on success, 1 when ``compare --fail-on-regression`` finds a regression, 2 for a
usage error (bad arguments, no store, an unknown run id).
"""

from __future__ import annotations

import argparse
import csv
import difflib
import io
import math
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs

from ._baseline import BaselineComparison, MetricComparison, compare_runs, setup_differences
from ._hygiene import RunWarning, run_warnings
from ._js import js_json
from ._runs import record_phase
from ._tables import (
    comparison_table,
    name_cell,
    phase_label,
    score_rows,
    stat_text,
    table,
    terminal_text,
    warning_lines,
)
from ._uncertainty import (
    DEFAULT_SCORE_RESAMPLES,
    ScoreUncertainty,
    score_uncertainty,
    tied_with_above,
)
from .compare import Comparison
from .records import ParticipantRecords, TaskRecord
from .scoring import (
    ScoreResult,
    ScoringSpec,
    compute_stats,
    metric_samples,
    score,
    scoring_config_to_spec,
)
from .store import ResultStore, StoredRun, StoreError, UnknownRunError

__all__ = ["main"]

DEFAULT_STORE = ".benchmarks/benchsdk.sqlite3"
PROG = "pytest-benchsdk"
#: How many characters of a run id the tables show (any unique prefix is accepted).
SHORT_ID = 12
_REPORT_MISSING = "report needs plotly: pip install 'pytest-benchsdk[report]'"
#: Namespace of the merged runs' ids: uuid5 of (benchmark, run key).
_MERGE_NAMESPACE = uuid.UUID("5f0c8a4e-2b7d-4c1e-9a53-6d2e1f7b8c90")

_EPILOG = """\
examples:
  pytest-benchsdk runs --benchmark sandbox --limit 5
  pytest-benchsdk export 3f2a9c --format csv -o records.csv
  pytest-benchsdk merge shard-*/benchsdk.sqlite3 -o merged.sqlite3
  pytest-benchsdk --store merged.sqlite3 report -o report.html
  pytest-benchsdk compare 3f2a9c 81be07 --fail-on-regression
  pytest-benchsdk show 81be07
  pytest-benchsdk platform runs list my-benchmark --json
  pytest-benchsdk init my-benchmarks

A RUN is a stored run id or any unique prefix of one (as `runs` lists them).
"""


class UsageError(Exception):
    """A problem with the command line or the store: printed, exit status 2."""


# --- helpers -------------------------------------------------------------------------------------


def _open_store(path: str, *, create: bool = False) -> ResultStore:
    if not create and not Path(path).is_file():
        raise UsageError(f"no results store at {path} (--store PATH; default {DEFAULT_STORE})")
    try:
        return ResultStore(path)
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def short_id(run_id: str) -> str:
    return run_id if len(run_id) <= SHORT_ID else run_id[:SHORT_ID] + "…"


def resolve_run(store: ResultStore, ref: str) -> StoredRun:
    """The run with id ``ref``, or the one run whose id starts with it; else a usage error
    naming the closest ids."""
    try:
        return store.get_run(ref)
    except UnknownRunError:
        pass
    ids = [run.run_id for run in store.list_runs(limit=1_000_000)]
    matches = [run_id for run_id in ids if ref and run_id.startswith(ref)]
    if len(matches) == 1:
        return store.get_run(matches[0])
    if matches:
        shown = ", ".join(short_id(m) for m in matches[:5])
        raise UsageError(f"run id {ref} is ambiguous in {store.path}: {shown}")
    heads = {run_id[: max(len(ref), 8)]: run_id for run_id in ids}
    close = [heads[h] for h in difflib.get_close_matches(ref, list(heads), n=3, cutoff=0.0)]
    hint = f"; closest: {', '.join(short_id(c) for c in close)}" if close else ""
    if not ids:
        hint = " (the store holds no runs)"
    raise UsageError(f"no run {ref} in {store.path}{hint}")


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
                run.status + (" (dry run)" if run.dry_run else ""),
                terminal_text(_participant_list(run.participants)),
                str(run.record_count),
                (run.environment.git_sha or "-")[:10],
                terminal_text(run.run_key) if run.run_key else "-",
            ]
        )
    print("\n".join(table(rows, indent="")))
    return 0


# --- export --------------------------------------------------------------------------------------


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A record as CSV cells: nested objects as dotted keys, lists as JSON, ``None`` as an
    empty cell, booleans as ``true``/``false``, numbers as JSON writes them."""
    cells: dict[str, str] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            nested = flatten(item, name + ".")
            cells.update(nested if nested else {name: "{}"})
        elif item is None:
            cells[name] = ""
        elif isinstance(item, str):
            cells[name] = item
        else:
            cells[name] = js_json(item)
    return cells


def cmd_export(args: argparse.Namespace) -> int:
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
    rows = [
        {"participant": pr.participant, **flatten(record.to_wire())}
        for pr in participants
        for record in pr.records
    ]
    header = list(dict.fromkeys(key for row in rows for key in row)) or ["participant"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    _write_text(buffer.getvalue(), args.output)
    return 0


# --- merge ---------------------------------------------------------------------------------------


def merged_run_id(benchmark_slug: str, run_key: str) -> str:
    """The id of the run that the shards of ``run_key`` merge into (the same in every merge)."""
    return uuid.uuid5(_MERGE_NAMESPACE, f"{benchmark_slug}\0{run_key}").hex


@attrs.define
class _Source:
    store: ResultStore
    run: StoredRun


def _worst_status(statuses: Iterable[str]) -> str:
    found = set(statuses)
    for status in ("running", "interrupted", "failed"):
        if status in found:
            return "interrupted" if status == "running" else status
    return "passed"


def _union(lists: Iterable[Iterable[str]]) -> list[str]:
    return list(dict.fromkeys(name for names in lists for name in names))


def _merged_metadata(run_id: str, runs: Sequence[StoredRun], participants: list[str]) -> StoredRun:
    first = runs[0]
    knobs = dict(first.knobs)
    providers = [run.knobs.get("providers") for run in runs]
    if all(isinstance(p, list) for p in providers):
        knobs["providers"] = _union(p for p in providers if isinstance(p, list))
    snapshot = dict(first.config_snapshot)
    if "participants" in snapshot:
        snapshot["participants"] = participants
    platform_ids = {run.platform_run_id for run in runs}
    platform_run_id = platform_ids.pop() if len(platform_ids) == 1 else None
    finished = [run.finished_at for run in runs]
    return attrs.evolve(
        first,
        run_id=run_id,
        knobs=knobs,
        participants=tuple(participants),
        config_snapshot=snapshot,
        dry_run=all(run.dry_run for run in runs),
        session_id=None,
        status=_worst_status(run.status for run in runs),
        started_at=min(run.started_at for run in runs),
        finished_at=None if None in finished else max(f for f in finished if f is not None),
        platform_run_id=platform_run_id,
        dashboard_url=first.dashboard_url if platform_run_id is not None else None,
    )


def _spec_of(run: StoredRun, units: Mapping[str, str]) -> ScoringSpec | None:
    """The run's declarative scoring from its config snapshot (``None`` without one); the units
    the run's scores were stored with win, as the session's display units did."""
    scoring = run.config_snapshot.get("scoring")
    if not isinstance(scoring, Mapping):
        return None
    dimensions = run.config_snapshot.get("dimensions")
    display = {"metrics": [{"key": key, "unit": unit} for key, unit in units.items()]}
    return scoring_config_to_spec(
        scoring, dimensions if isinstance(dimensions, Mapping) else None, display
    )


@attrs.frozen
class _Outcome:
    """What :func:`score` reads of a run outcome."""

    participants: Sequence[ParticipantRecords]


def _score_merged(
    out: ResultStore, merged: StoredRun, sources: Sequence[_Source], notes: list[str]
) -> None:
    """Score the merged run as the session would have: its scores, their intervals and the
    run warnings (each only if a shard had them); the shards' comparisons with their own
    baselines describe the shards and are not kept."""
    run_id = merged.run_id
    stored_scores = [r for s in sources for r in s.store.scores(s.run.run_id)]
    units = {m.name: m.unit for r in stored_scores for m in r.metrics}
    had = {kind for s in sources for kind in s.store.analyses(s.run.run_id)}
    for kind in ("uncertainty", "warnings", "comparison"):
        out.delete_analysis(run_id, kind)
    try:
        spec = _spec_of(merged, units)
    except Exception as exc:
        out.save_scores(run_id, [])
        notes.append(f"not scored: its scoring config is unreadable ({exc})")
        return
    outcome = _Outcome(tuple(out.participant_records(run_id)))
    if spec is None:
        out.save_scores(run_id, [])
        if stored_scores:
            notes.append(
                "not scored: its shards were scored by on_score, which the store does not keep"
            )
            return
    else:
        out.save_scores(run_id, score(outcome, spec))
        if "uncertainty" in had:
            estimates = score_uncertainty(outcome, spec, resamples=DEFAULT_SCORE_RESAMPLES)
            out.save_analysis(run_id, "uncertainty", [u.to_json() for u in estimates])
    if "warnings" in had:
        found = [w.to_json() for pr in outcome.participants for w in _run_warnings(pr, spec)]
        out.save_analysis(run_id, "warnings", found)


def _run_warnings(participant: ParticipantRecords, spec: ScoringSpec | None) -> list[RunWarning]:
    """The session's run-hygiene checks on one participant's records (the scored metrics'
    samples, else the passing iterations' latency)."""
    records = participant.records
    if not records:
        return []
    if spec is not None and spec.metrics:
        samples = metric_samples(spec, records)
    else:
        latencies = [r.latency_ms for r in records if r.status == "success"]
        samples = {"latency_ms": [lat for lat in latencies if lat is not None]}
    failed = sum(1 for r in records if r.status != "success")
    return run_warnings(participant.participant, samples, iterations=len(records), failed=failed)


def _merge_group(
    out: ResultStore, run_id: str, sources: list[_Source], notes: list[str]
) -> StoredRun:
    own = [s for s in sources if s.run.run_id == run_id]
    shards = [s for s in sources if s.run.run_id != run_id]
    ordered = own + shards
    participants = _union(s.run.participants for s in ordered)
    records: dict[tuple[str, int], tuple[str, dict[str, Any]]] = {}
    lines: dict[str, list[str]] = {}
    shard_lines: dict[str, list[str]] = {}
    for source in ordered:
        for name, wire in source.store.record_wires(source.run.run_id):
            records[(name, int(wire["taskIndex"]))] = (name, wire)
            if name not in participants:
                participants.append(name)
        for name, got in source.store.all_log_lines(source.run.run_id).items():
            target = lines if source.run.run_id == run_id else shard_lines
            target.setdefault(name, []).extend(got)
    # An earlier merge's lines stand for the participants no shard brings again.
    lines = {name: got for name, got in lines.items() if name not in shard_lines}
    lines.update(shard_lines)
    merged = _merged_metadata(run_id, [s.run for s in ordered], participants)
    out.put_run(merged)
    out.replace_records(run_id, list(records.values()), lines)
    _score_merged(out, merged, ordered, notes)
    return out.get_run(run_id)


def _copy_run(out: ResultStore, source: _Source) -> None:
    run_id = source.run.run_id
    wires = source.store.record_wires(run_id)
    lines = source.store.all_log_lines(run_id)
    scores = source.store.scores(run_id)
    analyses = source.store.analyses(run_id)
    out.put_run(source.run)
    out.replace_records(run_id, wires, lines)
    out.save_scores(run_id, scores)
    for kind, body in analyses.items():
        out.save_analysis(run_id, kind, body)


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
        groups: dict[tuple[str, str], list[_Source]] = {}
        plain: list[_Source] = []
        seen: set[tuple[str, str]] = set()
        for store in inputs:
            for run in reversed(store.list_runs(limit=1_000_000)):  # oldest first
                # A run in two stores is the same run (a copied file), read once; but an
                # earlier merge's run in two stores holds what each of those merges brought.
                earlier_merge = run.run_key is not None and run.run_id == merged_run_id(
                    run.benchmark_slug, run.run_key
                )
                seen_as = (str(store.path) if earlier_merge else "", run.run_id)
                if seen_as in seen:
                    continue
                seen.add(seen_as)
                if run.run_key is None:
                    plain.append(_Source(store, run))
                else:
                    groups.setdefault((run.benchmark_slug, run.run_key), []).append(
                        _Source(store, run)
                    )
        for source in plain:
            _copy_run(out, source)
        for (slug, key), sources in groups.items():
            notes: list[str] = []
            merged = _merge_group(out, merged_run_id(slug, key), sources, notes)
            shards = sum(1 for s in sources if s.run.run_id != merged.run_id)
            print(
                f"{slug} run key {terminal_text(key)}: {shards} shard(s) -> run "
                f"{short_id(merged.run_id)} ({len(merged.participants)} participants, "
                f"{merged.record_count} records)"
            )
            for note in notes:
                print(f"  {note}")
        print(
            f"merged {len(groups)} keyed run(s) and copied {len(plain)} run(s) without a run "
            f"key into {args.output}"
        )
    finally:
        for store in inputs:
            store.close()
        out.close()
    return 0


# --- compare -------------------------------------------------------------------------------------


def _stored_spec(store: ResultStore, run: StoredRun) -> ScoringSpec | None:
    units = {m.name: m.unit for r in store.scores(run.run_id) for m in r.metrics}
    try:
        return _spec_of(run, units)
    except Exception:
        return None


def _setup(run: StoredRun) -> dict[str, Any]:
    return {
        "benchmark": run.benchmark_slug,
        "knobs": dict(run.knobs),
        "environment": run.environment.to_dict(),
    }


def cmd_compare(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        base = resolve_run(store, args.base)
        current = resolve_run(store, args.current)
        baseline_records = {
            pr.participant: pr.records for pr in store.participant_records(base.run_id)
        }
        current_records = {
            pr.participant: pr.records
            for pr in store.participant_records(current.run_id)
            if pr.records
        }
        spec = _stored_spec(store, current)
        scored_elsewhere = spec is None and bool(store.scores(current.run_id))
    rows = compare_runs(baseline_records, current_records, spec)
    comparison = BaselineComparison(
        f"run {base.run_id} ({base.started_at})",
        base.run_id,
        setup_differences(_setup(base), _setup(current)),
        rows,
    )
    print(_title(current))
    if scored_elsewhere:
        print("  (scored by on_score, which the store does not keep: comparing the latency)")
    print("\n".join(comparison_table(comparison)))
    regressions = comparison.regressions
    if regressions and args.fail_on_regression:
        for row in regressions:
            print(
                f"ERROR regressed (--fail-on-regression): {current.benchmark_slug}: "
                f"{terminal_text(row.line())}"
            )
        return 1
    return 0


# --- show ----------------------------------------------------------------------------------------


def _title(run: StoredRun) -> str:
    return f"{terminal_text(run.benchmark_name)} ({run.benchmark_slug}) [run {run.run_id}]"


def _knobs_line(run: StoredRun) -> str:
    knobs = run.knobs
    phases = run.config_snapshot.get("phases")
    iterations: Any = knobs.get("iterations")
    if isinstance(phases, list):
        counts = [p.get("iterations") for p in phases if isinstance(p, Mapping)]
        if all(isinstance(c, int) for c in counts):
            iterations = sum(c for c in counts if isinstance(c, int))
    stagger = knobs.get("staggerDelayMs")
    if isinstance(stagger, float) and stagger.is_integer():
        stagger = int(stagger)
    return (
        f"Knobs: iterations={iterations}, concurrency={knobs.get('concurrency')}, "
        f"staggerDelayMs={stagger}, groupBy={knobs.get('groupBy')}"
    )


def _latency_cell(records: Sequence[TaskRecord]) -> str:
    latencies = [r.latency_ms for r in records if r.latency_ms is not None]
    if not latencies:
        return "-"
    stats = compute_stats(latencies)
    return f"{stat_text(stats.median)}/{stat_text(stats.p95)}/{stat_text(stats.p99)}"


def _latency_rows(participants: Sequence[ParticipantRecords]) -> list[list[str]]:
    rows = [["participant", "success", "latency med/p95/p99 (ms)"]]
    for pr in participants:
        parts: list[tuple[str, Sequence[TaskRecord]]] = [(name_cell(pr.participant), pr.records)]
        phases = list(dict.fromkeys(record_phase(r) for r in pr.records))
        if phases != [None]:
            for phase in phases:
                if phase is not None:
                    in_phase = [r for r in pr.records if record_phase(r) == phase]
                    parts.append((phase_label(str(phase)), in_phase))
        for label, records in parts:
            ok = sum(1 for r in records if r.status == "success")
            rows.append([label, f"{ok}/{len(records)}", _latency_cell(records)])
    return rows


def _uncertainty_of(body: Any) -> list[ScoreUncertainty] | None:
    if not isinstance(body, list):
        return None
    try:
        return [
            ScoreUncertainty(
                participant=u["participant"],
                score=u["score"],
                low=u["low"],
                high=u["high"],
                rank=u["rank"],
                rank_probabilities=u["rankProbabilities"],
                skipped=u["skipped"],
                level=u["level"],
                resamples=u["resamples"],
            )
            for u in body
        ]
    except (KeyError, TypeError):
        return None


def _warnings_of(body: Any) -> list[RunWarning]:
    if not isinstance(body, list):
        return []
    return [
        RunWarning(
            str(w.get("code")), str(w.get("message")), str(w.get("participant")), w.get("metric")
        )
        for w in body
        if isinstance(w, Mapping)
    ]


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _comparison_of(body: Mapping[str, Any]) -> BaselineComparison:
    rows = []
    for row in body.get("rows") or []:
        c = row.get("comparison")
        comparison = None
        if isinstance(c, Mapping):
            comparison = Comparison(
                statistic=c["statistic"],
                lower_is_better=c["lowerIsBetter"],
                baseline_statistic=_number(c["baselineStatistic"]),
                current_statistic=_number(c["currentStatistic"]),
                baseline_n=c["baselineN"],
                current_n=c["currentN"],
                change=_number(c["change"]),
                ci_low=_number(c["ciLow"]),
                ci_high=_number(c["ciHigh"]),
                p_value=_number(c["pValue"]),
                verdict=c["verdict"],
                alpha=c["alpha"],
                noise_threshold=c["noiseThreshold"],
                resamples=c["resamples"],
                seed=c["seed"],
            )
        rows.append(
            MetricComparison(
                row["participant"],
                row["metric"],
                row["statistic"],
                row.get("unit"),
                comparison,
                row.get("note"),
            )
        )
    return BaselineComparison(
        str(body.get("baseline")),
        body.get("baselineRunId"),
        tuple(body.get("warnings") or ()),
        tuple(rows),
    )


def show_lines(store: ResultStore, run: StoredRun) -> list[str]:
    """The run's summary as the session printed it, from what the store kept."""
    lines = [_title(run), f"  {_knobs_line(run)}"]
    warmup = run.knobs.get("warmup")
    if warmup:
        lines.append(f"  Warm-up: {warmup} iteration(s) per participant first, never scored")
    status = f"  Status: {run.status}, started {run.started_at}"
    if run.run_key:
        status += f", run key {terminal_text(run.run_key)}"
    lines.append(status + (" (dry run)" if run.dry_run else ""))
    participants = store.participant_records(run.run_id)
    if not any(pr.records for pr in participants):
        lines.append("  No participant ran.")
        return lines
    lines.extend(table(_latency_rows(participants)))
    results: list[ScoreResult] = store.scores(run.run_id)
    uncertainty = _uncertainty_of(store.analysis(run.run_id, "uncertainty"))
    if results:
        scoring = run.config_snapshot.get("scoring")
        group_by = scoring.get("groupBy") if isinstance(scoring, Mapping) else None
        lines.append("  Scores:")
        lines.extend(
            table(
                score_rows(
                    results, uncertainty, group_by if isinstance(group_by, str) else None, {}
                ),
                indent="    ",
            )
        )
        if uncertainty and tied_with_above(uncertainty):
            lines.append("    (n= : tied with the participant above: their intervals overlap)")
    lines.extend(warning_lines(_warnings_of(store.analysis(run.run_id, "warnings"))))
    comparison = store.analysis(run.run_id, "comparison")
    if isinstance(comparison, Mapping):
        if comparison.get("note"):
            lines.append(f"  Baseline: none ({terminal_text(comparison['note'])})")
        elif "rows" in comparison:
            try:
                lines.extend(comparison_table(_comparison_of(comparison)))
            except (KeyError, TypeError, ValueError) as exc:
                lines.append(f"  (stored comparison unreadable: {exc})")
    if run.dashboard_url:
        lines.append(f"  View at: {run.dashboard_url}")
    return lines


def cmd_show(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        run = resolve_run(store, args.run)
        print("\n".join(show_lines(store, run)))
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
        from .report import write_report  # type: ignore[import-not-found,unused-ignore]
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
        "a run's records as upstream's wire JSON (per participant) or as CSV (one row each)",
        "pytest-benchsdk export 3f2a9c --format csv -o records.csv",
    )
    export.add_argument("run", metavar="RUN", help="run id or unique prefix")
    export.add_argument("--format", choices=("json", "csv"), default="json")
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
    show.set_defaults(handler=cmd_show)

    report = command(
        "report",
        "an HTML report of runs (default: the newest run of each benchmark); needs plotly",
        "pytest-benchsdk report -o report.html",
    )
    report.add_argument("runs", nargs="*", metavar="RUN", help="run ids or unique prefixes")
    report.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file")
    report.set_defaults(handler=cmd_report)
    # Listed for --help only: main() hands these to their own parsers before argparse runs.
    commands.add_parser(
        "platform",
        help="upstream bench's platform commands: auth, org, benchmarks, runs, results, "
        "iterations, artifacts, logs, export (pytest-benchsdk platform --help)",
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
    # Two commands with their own parsers, imported only when they run: ``platform`` (upstream
    # bench's platform commands, which parse their argv as upstream does) and ``init``.
    if args[:1] == ["platform"]:
        from . import platform_cli

        return platform_cli.main(args[1:])
    if args[:1] == ["init"]:
        from . import _scaffold

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
