"""``run_benchmark`` (upstream ``runBenchmark``) and ``run_benchmark_worker``: a benchmark run
without pytest, through the same session as a pytest session (:class:`~pytest_benchsdk._session.
BenchSession`: the store, the platform, scoring, the analyses, the summary) and the same plans
(:mod:`pytest_benchsdk._engine.plans`: group ids, executor plans, running an iteration)."""

from __future__ import annotations

import inspect
import os
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from pytest_benchsdk._analysis.scoring import ScoreResult
from pytest_benchsdk._base.defaults import DEFAULT_STORE
from pytest_benchsdk._base.js import js_json
from pytest_benchsdk._base.storepath import StoreLocation
from pytest_benchsdk._config.models import BenchmarkConfig, Participant, define_benchmark_config
from pytest_benchsdk._engine.benchfile import BenchIteration, load_bench_file
from pytest_benchsdk._engine.executor import Executor
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.plans import bench_iterations, context_call, plan_group, run_planned
from pytest_benchsdk._engine.schedule import (
    BenchmarkRunOutcome,
    NoAvailableParticipantsError,
    schedule_benchmark,
)
from pytest_benchsdk._session import (
    BenchSession,
    SessionHooks,
    SessionOptions,
    SessionSecrets,
)
from pytest_benchsdk.results import RunSummary
from pytest_benchsdk.runner._argv import CliArgs, parse_cli_args

__all__ = ["BenchmarkRunResult", "run_benchmark", "run_benchmark_worker"]

#: ``store=`` left out: the results store a pytest session uses by default, under the current
#: directory.
_DEFAULT = object()


@attrs.frozen
class BenchmarkRunResult(BenchmarkRunOutcome):
    """What :func:`run_benchmark` returns: upstream's ``BenchmarkRunOutcome`` (``run_id``,
    ``dashboard_url``, ``participants`` with their records, ``config``; ``store_run_id``) plus
    the run's ``scores`` (None without scoring), its ``summary`` (the one model every view
    renders), whether it ``passed`` and the ``errors`` of its session end."""

    scores: tuple[ScoreResult, ...] | None = attrs.field(default=None, kw_only=True)
    summary: RunSummary | None = attrs.field(default=None, kw_only=True)
    passed: bool = attrs.field(default=False, kw_only=True)
    errors: tuple[str, ...] = attrs.field(default=(), kw_only=True)


def _file_of(task: Callable[..., Any]) -> Path | None:
    try:
        source = inspect.getsourcefile(inspect.unwrap(task))
    except TypeError:
        return None
    return Path(source) if source else None


def _file_key(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def _options(
    argv_or_options: Sequence[str] | SessionOptions,
    config: BenchmarkConfig,
    environ: Mapping[str, str],
    *,
    base_url: str | None,
    api_key: str | None,
    org: str | None,
    store: object,
) -> tuple[SessionOptions, Mapping[str, str]]:
    if isinstance(argv_or_options, SessionOptions):
        options = argv_or_options
        args = options.run_args
        custom = args.custom if isinstance(args, CliArgs) else {}
        return options, custom
    if isinstance(argv_or_options, str):
        raise TypeError("argv must be a list of strings (upstream flags), not one string")
    args = parse_cli_args(argv_or_options, config.custom_cli_flags or (), env=environ)
    if store is _DEFAULT:
        store_path: Path | None = Path(DEFAULT_STORE).absolute()
        origin = f"the default, {DEFAULT_STORE} under the current directory"
    elif isinstance(store, StoreLocation):  # the run command's, from the ini file
        store_path, origin = store.path, store.origin
    else:
        store_path = None if store is None else Path(os.fspath(store)).absolute()  # type: ignore[call-overload]
        origin = "store="
    options = SessionOptions(
        run_args=args,
        dry_run=args.no_ingest,
        store_path=store_path,
        store_origin=origin,
        base_url=base_url,
        api_key=api_key,
        org=org,
        # Upstream's rule: a failed iteration is data, not a failed run.
        failed_iterations="record",
    )
    return options, args.custom


def run_benchmark(
    config: BenchmarkConfig | Mapping[str, Any],
    task: Callable[..., Any],
    argv_or_options: Sequence[str] | SessionOptions = (),
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    org: str | None = None,
    store: str | os.PathLike[str] | object | None = _DEFAULT,
    env: Mapping[str, str] | None = None,
    write: Callable[[str], None] | None = None,
    file: str | os.PathLike[str] | None = None,
) -> BenchmarkRunResult:
    """Run one benchmark without pytest (upstream ``runBenchmark(config, task, argv, options)``):
    its participants' iterations as the plugin runs them, every record in the results store
    and (with credentials, not in a dry run) on the platform, then the scores, ``on_complete``
    and the summary, printed as the pytest session's ``benchmarks`` section.

    ``argv_or_options``: upstream ``bench run`` flags (``["--iterations", "5", "--dry-run"]``,
    see :func:`parse_cli_args`), or a :class:`SessionOptions` for everything the pytest options
    set. ``base_url``/``api_key``/``org`` override the resolved credentials (upstream's
    ``options``). ``store``: the results store (default ``.benchmarks/benchsdk.sqlite3`` under
    the current directory; ``None``: none). ``env``: the environment (default ``os.environ``).
    ``write``: where the lines go (default ``print``). ``file``: the bench file the run is
    stored under (default the task's source file).

    Raises ``ValueError`` for bad flags, an unknown participant or shape,
    :class:`~pytest_benchsdk.BenchmarkConfigError` for a bad config,
    :class:`~pytest_benchsdk.NoAvailableParticipantsError` when no participant has its
    required env vars (upstream's), and re-raises ``KeyboardInterrupt`` after the records so
    far are stored and the run is marked interrupted.
    """
    environ = dict(os.environ if env is None else env)
    root = Path.cwd()
    out = print if write is None else write
    if not isinstance(config, BenchmarkConfig):
        config = define_benchmark_config(config)
    options, custom = _options(
        argv_or_options, config, environ, base_url=base_url, api_key=api_key, org=org, store=store
    )
    path = Path(file) if file is not None else _file_of(task)
    path = path if path is not None else root / f"{config.benchmark_slug}.py"
    bench_file = load_bench_file(path, types.SimpleNamespace(config=config, task=task))
    file_key = _file_key(path, root)
    schedule = schedule_benchmark(
        bench_file.config,
        options.run_args,
        environ,
        providers=options.run_args.providers,
        flags="--" if isinstance(options.run_args, CliArgs) else "--bench-",
        is_async=inspect.iscoroutinefunction(bench_file.task),
    )
    if not schedule.participants:
        for skipped in schedule.skipped:
            out(f"Skipping {skipped.name}: missing {', '.join(skipped.missing)}")
        raise NoAvailableParticipantsError(schedule.skipped)
    call = context_call(bench_file.task, str(path))

    def participants_of(key: str) -> tuple[Participant, ...] | None:
        return bench_file.config.participants if key == file_key else None

    session = BenchSession(
        options,
        environ=environ,
        rootpath=root,
        secrets=SessionSecrets(environ, options.api_key, participants_of),
        hooks=SessionHooks(write=out),
    )
    interrupted = False
    try:
        session.check_store()
        iterations = [
            iteration
            for iteration, skipped in bench_iterations(file_key, schedule, custom)
            if skipped is None
        ]
        chosen: dict[str, set[int]] = {}
        for iteration in iterations:
            if not iteration.slot.warmup:
                chosen.setdefault(iteration.participant.name, set()).add(iteration.slot.index)
        run = session.open_run(
            file_key,
            bench_file,
            schedule,
            chosen,
            whole_plan=True,
            thresholds={name: list(schedule.thresholds) for name in schedule.requested},
        )
        session.begin([run], verbose=1)  # its header says every warning in full
        executor = Executor()
        try:
            _run_groups(session, executor, run.file_key, schedule, iterations, call, out)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            executor.cancel_all()
            for line in executor.shutdown():
                out(f"benchsdk: {line}")
        if interrupted:
            out("")
            out(
                "benchsdk: interrupted (KeyboardInterrupt): storing what ran, the run is marked "
                "interrupted."
            )
        elif run.dashboard_url:
            out(f"All done. View at: {run.dashboard_url}")
        else:
            out("All done. No platform run created.")
        failed = session.finish(interrupted=interrupted)
        for line, _ in session.summary_lines():
            out(line)
        outcome = run.outcome()
        result = BenchmarkRunResult(
            run_id=outcome.run_id,
            dashboard_url=outcome.dashboard_url,
            participants=outcome.participants,
            config=outcome.config,
            store_run_id=outcome.store_run_id,
            scores=tuple(run.results) if run.results is not None else None,
            summary=run.summary,
            passed=session.passed and not failed and not interrupted,
            errors=(*run.errors, *session.session_errors),
        )
    finally:
        session.close()
    if interrupted:
        raise KeyboardInterrupt
    return result


def _run_groups(
    session: BenchSession,
    executor: Executor,
    file_key: str,
    schedule: Any,
    iterations: Sequence[BenchIteration],
    call: Callable[..., object],
    out: Callable[[str], None],
) -> None:
    """Run the iterations group by group, in run order, keeping each record as it comes and
    printing upstream's progress lines (:class:`_ProgressLines`)."""
    run = session.runs[file_key]
    groups: dict[str, list[BenchIteration]] = {}
    for iteration in iterations:
        groups.setdefault(iteration.group_id, []).append(iteration)
    refused: dict[str, str | None] = {}
    is_async = inspect.iscoroutinefunction(getattr(call, "task", call))
    link = session if session.platform is not None else None
    progress = _ProgressLines(out, schedule.resolved.group_by, iterations)
    for group_id, members in groups.items():
        admitted = []
        for member in members:
            name = member.participant.name
            if name not in refused:
                progress.participant_starts(name)
                refused[name] = session.admit(file_key, name)
                if refused[name] is not None:
                    progress.participant_refused(name)
            if refused[name] is None:
                admitted.append(member)
        if not admitted:
            continue
        plan = plan_group(
            group_id,
            schedule.resolved,
            [(member, call) for member in admitted],
            is_async=is_async,
            link=link,
        )
        for member in admitted:
            outcome = run_planned(executor, plan, member.key)
            payload = RecordPayload.of(
                file_key, member.participant.name, outcome, session.secrets_of(run)
            )
            session.keep(payload)
            if not member.slot.warmup:
                progress.result(member.participant.name, payload.wire)
    progress.end(refused)


class _ProgressLines:
    """Upstream ``runBenchmark``'s console lines while a run goes (reference §3.3):
    participant mode, per participant a 70-character ``=`` rule, ``  Participant: <name>``,
    a rule, a line per result and ``  Done: <ok>/<n> succeeded.``; round mode,
    ``Interleaving <P> participant(s), <R> round(s) each.``, a line per result and
    ``  <name>: done.`` (``done (with errors).``) at the end. Warm-ups print nothing."""

    def __init__(
        self, out: Callable[[str], None], group_by: str, iterations: Sequence[BenchIteration]
    ) -> None:
        self._out = out
        self._round = group_by == "round"
        self._totals: dict[str, int] = {}
        for iteration in iterations:
            if not iteration.slot.warmup:
                name = iteration.participant.name
                self._totals[name] = self._totals.get(name, 0) + 1
        self._current: str | None = None
        self._ok: dict[str, int] = {}
        self._done: dict[str, int] = {}
        out("")  # upstream's blank line after the knobs
        if self._round and self._totals:
            rounds = max(self._totals.values())
            out(f"Interleaving {len(self._totals)} participant(s), {rounds} round(s) each.")
            out("")

    def participant_starts(self, name: str) -> None:
        if self._round:
            return
        self._close_participant()
        self._current = name
        rule = "=" * 70
        for line in (rule, f"  Participant: {name}", rule):
            self._out(line)

    def participant_refused(self, name: str) -> None:
        """No iteration of ``name`` runs here (its pool had no worker left; the session said
        so): no ``Done`` line, as upstream's runner without an assignment."""
        if self._current == name:
            self._current = None

    def result(self, name: str, wire: Mapping[str, Any]) -> None:
        self._done[name] = self._done.get(name, 0) + 1
        head = f"  [{name}] Task {int(wire['taskIndex']) + 1}/{self._totals.get(name, 0)}:"
        data = wire.get("data")
        if wire.get("status") == "success":
            self._ok[name] = self._ok.get(name, 0) + 1
            shown = f" {js_json(data)}" if isinstance(data, Mapping) and data else ""
            self._out(f"{head} success{shown}")
            return
        code = wire.get("errorCode") or "unknown error"
        detail = None
        if isinstance(data, Mapping):
            detail = data.get("errorMessage")
            if detail is None:
                detail = data.get("error")
        suffix = f": {detail}" if isinstance(detail, str) and detail else ""
        self._out(f"{head} FAILED — {code}{suffix}")

    def _close_participant(self) -> None:
        name = self._current
        if name is None:
            return
        self._current = None
        self._out(f"  Done: {self._ok.get(name, 0)}/{self._done.get(name, 0)} succeeded.")
        self._out("")

    def end(self, refused: Mapping[str, str | None]) -> None:
        if not self._round:
            self._close_participant()
            return
        for name in self._totals:
            if refused.get(name) is not None or name not in self._done:
                continue
            failed = self._ok.get(name, 0) < self._done[name]
            self._out(f"  {name}: done{' (with errors)' if failed else ''}.")
        self._out("")


def run_benchmark_worker(
    *,
    benchmark_slug: str,
    participant: Participant | Mapping[str, Any] | str,
    task: Callable[..., Any],
    benchmark_name: str | None = None,
    run_key: str | None = None,
    worker_pool: int | None = None,
    close_after_ms: float | None = None,
    iterations: int | None = None,
    concurrency: int | None = None,
    stagger_delay_ms: float | None = None,
    group_by: str | None = None,
    no_ingest: bool = False,
    store: str | os.PathLike[str] | object | None = _DEFAULT,
    write: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
    **run_options: Any,
) -> BenchmarkRunResult:
    """Upstream ``runBenchmarkWorker(options)``: a one-participant benchmark built with
    :func:`~pytest_benchsdk.define_benchmark_config` and run by :func:`run_benchmark` with
    ``--run-key``, ``--worker-pool``, ``--close-after-ms`` and ``--dry-run`` (``no_ingest``)
    as given. ``store``, ``write`` and ``env`` are :func:`run_benchmark`'s (``store=None``:
    no results store; ``write=lambda line: None``: silence); ``run_options`` go to it too
    (``base_url``, ``api_key``, ``org``, ``file``)."""
    if isinstance(participant, str):
        participant = Participant(participant)
    elif isinstance(participant, Mapping):
        participant = Participant(**participant)
    fields: dict[str, Any] = {
        "benchmark_slug": benchmark_slug,
        "benchmark_name": benchmark_name or benchmark_slug,
        "participants": [participant],
        "iterations": iterations or 1,
        "concurrency": concurrency or 1,
        "stagger_delay_ms": stagger_delay_ms or 0,
        "group_by": group_by or "participant",
        "default_providers": [participant.name],
    }
    if close_after_ms is not None:
        fields["close_after_ms"] = close_after_ms
    config = define_benchmark_config(**fields)
    argv: list[str] = []
    if run_key:
        argv += ["--run-key", run_key]
    if worker_pool is not None:
        argv += ["--worker-pool", str(worker_pool)]
    if close_after_ms is not None:
        argv += ["--close-after-ms", str(close_after_ms)]
    if no_ingest:
        argv.append("--dry-run")
    return run_benchmark(config, task, argv, store=store, write=write, env=env, **run_options)
