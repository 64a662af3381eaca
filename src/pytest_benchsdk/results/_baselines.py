"""Baselines, one home: what a REF names, which run may bear a baseline name, and the run a
comparison is made against.

Private to :mod:`pytest_benchsdk.results`. What baselines need of the store is found, named
and saved here, on two shared pieces: :mod:`._history` (a run's setup and the complete runs
with it, which ``pytest-benchsdk history`` follows too) and :attr:`RunStatus.incomplete
<pytest_benchsdk.results.RunStatus.incomplete>` (what "complete" means). The comparison itself
is pure analysis (:mod:`pytest_benchsdk._analysis.baseline`: :class:`Baseline`, the rows, the
verdicts, the between-run noise, the setup differences), made with the run's other analyses
(:func:`~pytest_benchsdk.results.analyse`). The session, the pytest glue and the store CLI only
call this module (``baseline rm`` only forgets a name: the store's ``delete_baseline``):

* :func:`find_run` is the one home of "a run id or any unique prefix, else the closest ids"
  (the store CLI's RUN arguments use it too);
* :func:`resolve_ref` checks a ``--bench-compare`` REF before anything runs;
* :func:`find_baseline` gives a run (of the session, or ``pytest-benchsdk compare``'s CURRENT)
  its :class:`Baseline`, with the between-run noise of its history;
* :func:`save_baseline` is the one rule for what a name may stand for, for ``--bench-save``
  and ``pytest-benchsdk baseline set`` alike: a complete run, unless forced;
* :func:`named_baselines` lists the names with their runs (``pytest-benchsdk baseline list``).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from pytest_benchsdk._analysis.baseline import HISTORY_RUNS, Baseline
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results._history import RunSetup, complete_runs, noise_history
from pytest_benchsdk.results._model import RunStatus
from pytest_benchsdk.results._samples import iso_time, sample_sets
from pytest_benchsdk.results._stored import stored_status
from pytest_benchsdk.store import NamedBaseline, ResultStore, StoredRun, UnknownRunError

__all__ = [
    "LATEST",
    "SHORT_ID",
    "BaselineRefused",
    "CompareRef",
    "RunRefError",
    "check_baseline_name",
    "find_baseline",
    "find_run",
    "named_baselines",
    "ran_text",
    "resolve_ref",
    "run_span",
    "save_baseline",
    "short_run_id",
    "utc_text",
]

#: The REF of the newest complete run with the same setup.
LATEST: Final = "latest"
#: How many characters of a run id people see (any unique prefix is accepted).
SHORT_ID: Final = 12
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]{0,99}")
_SCAN_LIMIT: Final = 1_000_000


class RunRefError(ValueError):
    """A REF that names nothing usable (the message says what is wrong and what is close)."""


def short_run_id(run_id: str) -> str:
    return run_id if len(run_id) <= SHORT_ID else run_id[:SHORT_ID] + "…"


def check_baseline_name(name: str) -> str:
    """``name`` when it can name a baseline, else :class:`ValueError` saying why: letters,
    digits and ``. _ / + -`` (a branch name, say), at most 100 characters, starting with a
    letter or digit; not ``latest``, not ending in ``.json`` (that REF would be a file)."""
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"a baseline name is letters, digits and . _ / + - (at most 100, starting with a "
            f"letter or digit), e.g. main or release/1.2 (got {name!r})"
        )
    if name == LATEST or name.endswith(".json"):
        raise ValueError(
            f"{name!r} cannot be a baseline name: as a REF it means "
            + ("the newest complete run" if name == LATEST else "a --bench-json file")
        )
    return name


def _closest(ref: str, candidates: Sequence[str], labels: Mapping[str, str]) -> list[str]:
    heads = {c[: max(len(ref), 8)]: c for c in candidates}
    close = difflib.get_close_matches(ref, list(heads), n=3, cutoff=0.0)
    return [labels.get(heads[h], heads[h]) for h in close]


def find_run(store: ResultStore, ref: str) -> StoredRun:
    """The run with id ``ref``, or the one run whose id starts with it (also as the short id
    ``pytest-benchsdk runs`` prints, with its trailing ``…``); else :class:`RunRefError`
    naming the closest ids."""
    try:
        return store.get_run(ref)
    except UnknownRunError:
        pass
    ids = [run.run_id for run in store.list_runs(limit=_SCAN_LIMIT)]
    prefix = ref.removesuffix("…")
    matches = [run_id for run_id in ids if prefix and run_id.startswith(prefix)]
    if len(matches) == 1:
        return store.get_run(matches[0])
    if matches:
        shown = ", ".join(short_run_id(m) for m in matches[:5])
        raise RunRefError(f"run id {ref} is ambiguous in {store.path}: {shown}")
    if not ids:
        raise RunRefError(f"no run {ref} in {store.path} (the store holds no runs)")
    close = _closest(ref, ids, {i: short_run_id(i) for i in ids})
    raise RunRefError(f"no run {ref} in {store.path}; closest: {', '.join(close)}")


@attrs.frozen
class CompareRef:
    """A checked REF: ``latest``, a ``name`` (of baselines in the store), a stored ``run``
    (``run_id``), or a ``json`` file (its parsed ``document``)."""

    kind: Literal["latest", "name", "run", "json"]
    ref: str
    run_id: str | None = None
    path: Path | None = None
    document: Any = None


def _json_ref(ref: str, path: Path) -> CompareRef:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunRefError(f"cannot read {ref}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise RunRefError(f"{ref} is not JSON ({exc})") from None
    if not (isinstance(document, dict) and isinstance(document.get("benchmarks"), list)):
        raise RunRefError(f"{ref} is not a --bench-json file (it has no list of benchmarks)")
    return CompareRef("json", ref, path=path, document=document)


#: Where pytest-benchmark keeps its saved runs (its default ``--benchmark-storage``).
PYTEST_BENCHMARK_STORAGE: Final = Path(".benchmarks")


def _pytest_benchmark_machine_id() -> str:
    """pytest-benchmark's folder of this machine's saved runs (``utils.get_machine_id``)."""
    import platform

    return "-".join(
        (
            platform.system(),
            platform.python_implementation(),
            ".".join(platform.python_version_tuple()[:2]),
            platform.architecture()[0],
        )
    )


def pytest_benchmark_saved(ref: str, storage: Path = PYTEST_BENCHMARK_STORAGE) -> Path | None:
    """The run pytest-benchmark saved under ``ref`` as its ``--benchmark-compare=NUM`` finds
    it: the newest ``<storage>/<this machine>/REF*.json`` (``0001`` finds
    ``0001_base.json``), else in any machine's folder; None when there is none."""
    if not ref or any(c in ref for c in "/\\*?[]") or not storage.is_dir():
        return None
    for folder in (_pytest_benchmark_machine_id(), "*"):
        found = sorted(storage.glob(f"{folder}/{ref}*.json"), key=lambda f: (f.name, str(f)))
        if found:
            return found[-1]
    return None


def resolve_ref(store: ResultStore | None, ref: str, store_path: object = None) -> CompareRef:
    """What ``ref`` names, or :class:`RunRefError` saying why it names nothing: a ``.json``
    path is a file; otherwise a stored run id, then a baseline name, then a unique prefix of a
    run id, then an existing file. ``store`` None: there is no store (yet) at ``store_path``."""
    if ref == LATEST:
        return CompareRef("latest", ref)
    path = Path(ref)
    if ref.endswith(".json"):
        return _json_ref(ref, path)
    saved = pytest_benchmark_saved(ref) if not path.is_file() else None
    if store is None:
        if path.is_file():
            return _json_ref(ref, path)
        if saved is not None:
            return _json_ref(str(saved), saved)
        where = f" at {store_path}" if store_path is not None else ""
        raise RunRefError(
            f"no results store{where} to find baseline {ref} in (a run id or baseline name "
            "needs the store the runs went to; --bench-compare alone compares with the latest "
            "run once there is one)"
        )
    try:
        return CompareRef("run", ref, run_id=store.get_run(ref).run_id)
    except UnknownRunError:
        pass
    if store.baselines(ref):
        return CompareRef("name", ref)
    if saved is not None:  # pytest-benchmark's --benchmark-compare=0001
        return _json_ref(str(saved), saved)
    try:
        return CompareRef("run", ref, run_id=find_run(store, ref).run_id)
    except RunRefError as exc:
        if "ambiguous" in str(exc):
            raise
    if path.is_file():
        return _json_ref(ref, path)
    names = sorted({b.name for b in store.baselines()})
    ids = [run.run_id for run in store.list_runs(limit=_SCAN_LIMIT)]
    labels = {i: short_run_id(i) for i in ids}
    close = _closest(ref, [LATEST, *names, *ids], labels)
    hint = f"; closest: {', '.join(close)}" if close else " (the store holds no runs)"
    raise RunRefError(
        f"no run id, baseline name or file {ref} in {store.path}{hint}. A REF is 'latest', a "
        "run id or unique prefix (pytest-benchsdk runs), a name given by --bench-save or "
        "pytest-benchsdk baseline set, or a --bench-json file"
    )


def _from_store(store: ResultStore, stored: StoredRun, label: str) -> Baseline:
    records = {pr.participant: pr.records for pr in store.participant_records(stored.run_id)}
    return Baseline(label, stored.run_id, records, RunSetup.of(stored).describe(stored.environment))


def _from_json(ref: CompareRef, slug: str) -> Baseline | str:
    assert ref.path is not None
    if is_pytest_benchmark_document(ref.document):
        return _from_pytest_benchmark(ref, slug)
    found = next(
        (
            b
            for b in ref.document.get("benchmarks") or []
            if isinstance(b, dict) and b.get("benchmarkSlug") == slug
        ),
        None,
    )
    if found is None:
        return f"{ref.ref} has no run of benchmark {slug}"
    try:
        records = {
            str(part["participant"]): tuple(TaskRecord.from_wire(r) for r in part["records"])
            for part in found.get("participants") or []
        }
    except (KeyError, TypeError, ValueError) as exc:
        return f"{ref.ref}: unreadable records ({exc})"
    snapshot = found.get("config") or {}
    knobs = {k: snapshot[k] for k in ("concurrency", "staggerDelayMs", "groupBy") if k in snapshot}
    environment = ref.document.get("environment") or {}
    return Baseline(
        f"{ref.path.name} ({found.get('localRunId') or 'JSON'})",
        found.get("localRunId"),
        records,
        {"benchmark": slug, "knobs": knobs, "environment": environment},
    )


def is_pytest_benchmark_document(document: object) -> bool:
    """Whether a JSON document is pytest-benchmark's (``--benchmark-json``, a saved
    ``.benchmarks/<machine>/NNNN_name.json``, ``--bench-export pytest-benchmark``): its
    ``benchmarks`` are tests with ``fullname`` and ``stats``."""
    if not isinstance(document, Mapping):
        return False
    benchmarks = document.get("benchmarks")
    return isinstance(benchmarks, list) and any(
        isinstance(b, Mapping) and "fullname" in b and isinstance(b.get("stats"), Mapping)
        for b in benchmarks
    )


def _group_slug(entry: Mapping[str, Any]) -> str:
    """The benchmark slug a pytest-benchmark test's group runs under here: its ``group``,
    else its module (the benchmark fixture's rule, ``_plugin.benchmark.measuring``)."""
    group = entry.get("group")
    name = str(group) if group is not None else str(entry["fullname"]).partition("::")[0]
    slug = re.sub(r"[^a-z0-9]+", "-", name.removesuffix(".py").lower()).strip("-")
    return slug or "benchmark"


def _pytest_benchmark_record(entry: Mapping[str, Any]) -> TaskRecord:
    """A pytest-benchmark test's figures as the record of a benchmarked test: its rounds'
    time per call (``stats.data``, seconds, when the file kept it; else its five-number
    summary)."""
    stats = entry["stats"]
    data = stats.get("data")
    seconds = [float(v) for v in data] if isinstance(data, list) and data else []
    if not seconds:
        # Saved without its rounds (pytest-benchmark's default for --benchmark-save): its
        # five-number summary, whose minimum and median are the file's own.
        seconds = [float(stats[k]) for k in ("min", "q1", "median", "q3", "max")]
    rounds = {
        "count": int(stats.get("rounds", len(seconds))),
        "iterations": int(stats.get("iterations", 1)),
    }
    return TaskRecord(
        task_index=0,
        status="success",
        latency_ms=float(stats["median"]) * 1000,
        data={"time_ms": [v * 1000 for v in seconds], "rounds": rounds},
    )


def _from_pytest_benchmark(ref: CompareRef, slug: str) -> Baseline | str:
    """The baseline a pytest-benchmark JSON file holds for benchmark ``slug``: its tests of
    that group, matched with the run's benchmarked tests by ``fullname`` (the node id; each is
    also found under its name after the module, as the run names its participants, when that
    is unique in the group)."""
    assert ref.path is not None
    try:
        tests = [
            b for b in ref.document["benchmarks"] if isinstance(b, Mapping) and "fullname" in b
        ]
        # Grouped as the fixture groups (group, else module); a run grouped otherwise
        # (--benchmark-group-by=fullname, param, ...) finds its tests by fullname among all.
        entries = [b for b in tests if _group_slug(b) == slug] or tests
        if not entries:
            return f"{ref.ref} (a pytest-benchmark file) has no test of benchmark {slug}"
        records: dict[str, tuple[TaskRecord, ...]] = {}
        short: dict[str, list[str]] = {}
        for entry in entries:
            fullname = str(entry["fullname"])
            records[fullname] = (_pytest_benchmark_record(entry),)
            rest = fullname.partition("::")[2]
            if rest:
                short.setdefault(rest, []).append(fullname)
        for rest, names in short.items():
            if len(names) == 1 and rest not in records:
                records[rest] = records[names[0]]
    except (KeyError, TypeError, ValueError) as exc:
        return f"{ref.ref}: unreadable pytest-benchmark file ({type(exc).__name__}: {exc})"
    machine = ref.document.get("machine_info") or {}
    kept = any(isinstance(e["stats"].get("data"), list) for e in entries)
    how = "" if kept else ", min/q1/median/q3/max only: saved without data"
    label = f"{ref.path.name} (pytest-benchmark{how})"
    environment = {
        "python_version": machine.get("python_version"),
        "implementation": machine.get("python_implementation"),
        "machine": machine.get("machine"),
        "hostname": machine.get("node"),
    }
    return Baseline(
        label,
        None,
        records,
        {
            "benchmark": slug,
            "knobs": {},
            "environment": {k: v for k, v in environment.items() if v},
        },
        tails_known=kept,
    )


def _label(run: StoredRun, name: str | None = None) -> str:
    what = f"baseline {name}: run" if name else "run"
    return f"{what} {run.run_id} ({run.started_at})"


def find_baseline(
    ref: CompareRef,
    store: ResultStore | None,
    setup: RunSetup,
    run_id: str | None,
) -> Baseline | str:
    """The baseline ``ref`` names for the run ``run_id`` with ``setup``, with the between-run
    noise of that setup's complete runs before it (:func:`noise_history`: from the history's
    fresh start, without the runs before a row's last change point or judged changed for it);
    or why there is none (one line).

    ``latest`` is the newest complete run with the same setup that did not fail
    ``--bench-compare-fail`` (a regression that failed the gate never becomes the baseline of
    the next run); a partial, interrupted or unfinished run, or one of another setup (knobs,
    dry run or not), is never picked implicitly."""
    slug = setup.benchmark_slug
    if ref.kind == "json":
        baseline = _from_json(ref, slug)
    elif store is None:
        return "no results store to find a baseline in (--bench-no-store)"
    elif ref.kind == "latest":
        chosen = next(
            (
                run
                for run, status in complete_runs(store, setup, before=run_id)
                if run.run_id != run_id and "regression" not in status.reasons
            ),
            None,
        )
        if chosen is None:
            return (
                f"no complete run of {slug} with the same setup in {store.path} yet; this run, "
                "when complete, is the next one's baseline"
            )
        baseline = _from_store(store, chosen, _label(chosen))
    elif ref.kind == "name":
        named = store.baselines(ref.ref, slug)
        if not named:
            others = sorted({b.benchmark_slug for b in store.baselines(ref.ref)})
            return (
                f"baseline {ref.ref} names no run of {slug} (it names runs of "
                f"{', '.join(others)}; pytest-benchsdk baseline set {ref.ref} RUN names one)"
            )
        try:
            stored = store.get_run(named[0].run_id)
        except UnknownRunError:
            return f"baseline {ref.ref} names run {named[0].run_id}, which the store no longer has"
        baseline = _from_store(store, stored, _label(stored, ref.ref))
    else:
        assert ref.run_id is not None
        stored = store.get_run(ref.run_id)
        baseline = _from_store(store, stored, _label(stored))
    if isinstance(baseline, str) or store is None:
        return baseline
    runs, values, left_out = noise_history(
        store, setup, before=run_id, limit=HISTORY_RUNS, baseline=baseline.run_id
    )
    return attrs.evolve(baseline, history=values, history_runs=runs, history_left_out=left_out)


# --- naming a run -------------------------------------------------------------------------------


def run_span(store: ResultStore, run_id: str) -> tuple[str, str] | None:
    """The run's own start and end (its first iteration's start, its last one's end, as ISO
    times), not the session's: the runs of one session are all opened when it starts."""
    spans = [
        span
        for participant in store.participant_records(run_id)
        if (span := sample_sets(participant.records).span()) is not None
    ]
    if not spans:
        return None
    return iso_time(min(s for s, _ in spans)), iso_time(max(e for _, e in spans))


def utc_text(iso: str) -> str:
    """``2026-12-07 05:21:34 UTC`` of a stored ISO time (as written, when it is not one)."""
    if len(iso) >= 19 and iso[10] == "T":
        return f"{iso[:10]} {iso[11:19]} UTC"
    return iso


def ran_text(run: StoredRun, span: tuple[str, str] | None) -> str:
    """``ran 2026-12-07 05:21:31–05:21:34 UTC``: the run's own iterations (``started …``, the
    time the session opened it, when no iteration has a time)."""
    if span is None:
        return f"started {utc_text(run.started_at)}"
    start, end = utc_text(span[0]), utc_text(span[1])
    if start[:10] == end[:10]:
        end = end[11:]
    return f"ran {start.removesuffix(' UTC')}–{end}"


class BaselineRefused(ValueError):
    """A run the one rule keeps from bearing a baseline name: it is not complete (the message
    says why, and how to name it anyway)."""


def save_baseline(
    store: ResultStore, name: str, run: StoredRun, status: RunStatus, *, force: bool = False
) -> str:
    """Let ``name`` stand for ``run`` among its benchmark's runs (moved if it named another),
    and the line that says so; ``status`` is the run's (:func:`stored_status`, or the session's
    own).

    The one rule, for ``--bench-save`` and ``pytest-benchsdk baseline set`` alike: a name
    stands for a **complete** run (finished, passed or failed, with every planned iteration
    selected), as ``latest`` is; an interrupted run, a ``-k``/node-id/``--lf`` subset or a
    run whose session never finished is :class:`BaselineRefused` unless ``force``d, since a
    comparison with it sees only what it ran. ``name`` is checked by
    :func:`check_baseline_name` first (:class:`ValueError`)."""
    check_baseline_name(name)
    head = f"Baseline {name} of {run.benchmark_slug}"
    why = status.incomplete
    if why is not None and not force:
        raise BaselineRefused(
            f"{head}: not saved, the run is not complete: {why}; "
            f"pytest-benchsdk baseline set --force {name} {run.run_id[:SHORT_ID]} names it anyway"
        )
    before = store.set_baseline(name, run.run_id)
    moved = f" (was run {short_run_id(before)})" if before and before != run.run_id else ""
    saved = store.baselines(name, run.benchmark_slug)
    when = f", saved {utc_text(saved[0].updated_at)}" if saved else ""
    ran = ran_text(run, run_span(store, run.run_id))
    line = f"{head}: run {short_run_id(run.run_id)} ({ran}, {status.text()}){when}{moved}"
    if why is not None:
        line += (
            f"\n  note: the run is not complete ({why}): comparisons with it see only what it ran"
        )
    return line


def named_baselines(
    store: ResultStore, benchmark_slug: str | None = None
) -> list[tuple[NamedBaseline, StoredRun | None, RunStatus | None]]:
    """The baseline names (of one benchmark, or all) by name then benchmark, each with its
    run and that run's status (None: the store no longer has the run)."""
    found: list[tuple[NamedBaseline, StoredRun | None, RunStatus | None]] = []
    for entry in store.baselines(benchmark_slug=benchmark_slug):
        try:
            run = store.get_run(entry.run_id)
        except UnknownRunError:
            found.append((entry, None, None))
        else:
            found.append((entry, run, stored_status(store, run)))
    return found
