"""Merging the stores of CI shards: :func:`merge_stores`, behind ``pytest-benchsdk merge``.

Private to :mod:`pytest_benchsdk.results`. The runs that share a benchmark and a run key (the
shards of one CI run, each in its own store) become one run, :func:`merged_run_id` (the same id
in every merge, so merging again replaces it): the union of their records (a record of the
same participant and task index is the later shard's), their log lines, metadata that holds
for all of them, the worst of their statuses with all their reasons. The merged run is then
scored and analysed as its session would have analysed it, with the same
:func:`~._analyse.analyse` and the same save step (:func:`~._stored.save_analyses`), and its
summary is kept. Runs without a run key are copied as they are.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from pytest_benchsdk._analysis.scoring import RecordsOutcome, score
from pytest_benchsdk._base.defaults import DEFAULT_SCORE_RESAMPLES
from pytest_benchsdk._config.thresholds import Threshold, parse_threshold
from pytest_benchsdk.results._analyse import HygieneOptions, analyse
from pytest_benchsdk.results._model import RunStatus
from pytest_benchsdk.results._samples import sample_sets
from pytest_benchsdk.results._stored import (
    ANALYSIS_KINDS,
    STATUS_KIND,
    SUMMARY_KIND,
    rebuild_summary,
    save_analyses,
    save_summary,
    stored_spec,
    stored_status,
)
from pytest_benchsdk.store import ResultStore, StoredRun

__all__ = ["MergeResult", "MergedRun", "merge_stores", "merged_run_id"]

#: Namespace of the merged runs' ids: uuid5 of (benchmark, run key).
_MERGE_NAMESPACE: Final = uuid.UUID("5f0c8a4e-2b7d-4c1e-9a53-6d2e1f7b8c90")


def merged_run_id(benchmark_slug: str, run_key: str) -> str:
    """The id of the run that the shards of ``run_key`` merge into (the same in every merge)."""
    return uuid.uuid5(_MERGE_NAMESPACE, f"{benchmark_slug}\0{run_key}").hex


@attrs.frozen
class MergedRun:
    """One run key's merge: ``shards`` runs (an earlier merge of the key not counted) became
    ``run``; ``notes`` say what could not be done as the session did it."""

    benchmark_slug: str
    run_key: str
    shards: int
    run: StoredRun
    notes: tuple[str, ...]


@attrs.frozen
class MergeResult:
    """What :func:`merge_stores` did: the merged runs, and how many runs without a run key it
    copied."""

    merged: tuple[MergedRun, ...]
    copied: int


@attrs.define
class _Source:
    store: ResultStore
    run: StoredRun


def merge_stores(inputs: Sequence[ResultStore], out: ResultStore) -> MergeResult:
    """Merge the runs of ``inputs`` into ``out``: each run key's runs into one run, the runs
    without a run key copied. A run found in two stores is the same run (a copied file), read
    once; but an earlier merge's run in two stores holds what each of those merges brought,
    so both are merged."""
    groups: dict[tuple[str, str], list[_Source]] = {}
    plain: list[_Source] = []
    seen: set[tuple[str, str]] = set()
    for store in inputs:
        for run in reversed(store.list_runs(limit=1_000_000)):  # oldest first
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
                groups.setdefault((run.benchmark_slug, run.run_key), []).append(_Source(store, run))
    for source in plain:
        _copy_run(out, source)
    merged = []
    for (slug, key), sources in groups.items():
        notes: list[str] = []
        run = _merge_group(out, merged_run_id(slug, key), sources, notes)
        shards = sum(1 for s in sources if s.run.run_id != run.run_id)
        merged.append(MergedRun(slug, key, shards, run, tuple(notes)))
    return MergeResult(tuple(merged), len(plain))


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


def _snapshot_thresholds(run: StoredRun) -> tuple[Threshold, ...]:
    """The thresholds the run's session judged (kept in its config snapshot)."""
    found = []
    for entry in run.config_snapshot.get("thresholds") or ():
        if isinstance(entry, Mapping):
            try:
                found.append(parse_threshold(str(entry["metric"]), entry["expression"]))
            except (KeyError, ValueError):
                continue
    return tuple(found)


def _merged_status(merged: StoredRun, sources: Sequence[_Source]) -> RunStatus:
    """The worst state of the shards, with every reason they had (an earlier merge of the same
    run key stands for the shards no input brings again)."""
    shards = [s for s in sources if s.run.run_id != merged.run_id] or list(sources)
    statuses = [stored_status(s.store, s.run) for s in shards]
    reasons = list(dict.fromkeys(r for status in statuses for r in status.reasons))
    return RunStatus(
        merged.status,
        tuple(reasons),
        planned=sum(status.planned for status in statuses),
        ran=merged.record_count,
        complete=all(status.complete for status in statuses),
        unit=statuses[0].unit if statuses else "iterations",
    )


def _analyse_merged(
    out: ResultStore, merged: StoredRun, sources: Sequence[_Source], notes: list[str]
) -> None:
    """Score and analyse the merged run as the session would have (the same
    :func:`~pytest_benchsdk.results.analyse`): its scores, their intervals, the run warnings
    and the thresholds, each only if a shard had them; the shards' comparisons with their own
    baselines describe the shards and are not kept. Then its summary."""
    run_id = merged.run_id
    merged = out.get_run(run_id)  # with the merged records counted
    stored_scores = [r for s in sources for r in s.store.scores(s.run.run_id)]
    had = {kind for s in sources for kind in s.store.analyses(s.run.run_id)}
    for kind in (*ANALYSIS_KINDS, SUMMARY_KIND, STATUS_KIND):
        out.delete_analysis(run_id, kind)
    # The shards' scores carry the units the session resolved (display units included).
    units = {m.name: m.unit for r in stored_scores for m in r.metrics}
    spec = stored_spec(out, merged, units)
    if spec is None and merged.config_snapshot.get("scoring") is not None:
        notes.append("not scored: its scoring config is unreadable")
    elif spec is None and stored_scores:
        notes.append(
            "not scored: its shards were scored by on_score, which the store does not keep"
        )
    records = tuple(out.participant_records(run_id))
    results = None if spec is None else score(RecordsOutcome(records), spec)
    out.save_scores(run_id, results or [])
    thresholds = _snapshot_thresholds(merged)
    draft = rebuild_summary(out, merged, participants=records)
    analyses = analyse(
        draft.participants,
        samples={pr.participant: sample_sets(pr.records) for pr in records},
        records=records,
        spec=spec,
        results=results,
        resamples=DEFAULT_SCORE_RESAMPLES if "uncertainty" in had and results else 0,
        hygiene=HygieneOptions(rounds=draft.knobs.rounds is not None)
        if "warnings" in had
        else None,
        thresholds={p.participant: thresholds for p in records} if thresholds else None,
    )
    save_analyses(out, run_id, analyses)
    notes.extend(analyses.errors)
    status = _merged_status(merged, sources)
    breached = any(v.outcome == "failed" for v in analyses.thresholds)
    if breached and "threshold" not in status.reasons:
        status = attrs.evolve(status, state="failed", reasons=(*status.reasons, "threshold"))
    summary = rebuild_summary(out, merged, analyses=analyses, participants=records)
    save_summary(out, run_id, attrs.evolve(summary, status=status))


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
    _analyse_merged(out, merged, ordered, notes)
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
