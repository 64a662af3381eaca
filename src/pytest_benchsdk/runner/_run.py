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
        session.begin([run])
        executor = Executor()
        try:
            _run_groups(session, executor, run.file_key, schedule, iterations, call)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            executor.cancel_all()
            for line in executor.shutdown():
                out(f"benchsdk: {line}")
        out("")
        if interrupted:
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
) -> None:
    """Run the iterations group by group, in run order, keeping each record as it comes."""
    run = session.runs[file_key]
    groups: dict[str, list[BenchIteration]] = {}
    for iteration in iterations:
        groups.setdefault(iteration.group_id, []).append(iteration)
    refused: dict[str, str | None] = {}
    is_async = inspect.iscoroutinefunction(getattr(call, "task", call))
    link = session if session.platform is not None else None
    for group_id, members in groups.items():
        admitted = []
        for member in members:
            name = member.participant.name
            if name not in refused:
                refused[name] = session.admit(file_key, name)
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
            session.keep(
                RecordPayload.of(
                    file_key, member.participant.name, outcome, session.secrets_of(run)
                )
            )


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
    **run_options: Any,
) -> BenchmarkRunResult:
    """Upstream ``runBenchmarkWorker(options)``: a one-participant benchmark built with
    :func:`~pytest_benchsdk.define_benchmark_config` and run by :func:`run_benchmark` with
    ``--run-key``, ``--worker-pool``, ``--close-after-ms`` and ``--dry-run`` (``no_ingest``)
    as given. ``run_options`` go to :func:`run_benchmark` (``store``, ``env``, ``write`` …)."""
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
    return run_benchmark(config, task, argv, **run_options)
