"""Upstream's ``runWorker(client, options)``: the loop of a queue-driven worker.
Claim one worker of a platform run, run the claimed task indices with the plugin's executor
(the same pool, stagger and step context as every run), send the records in batches with
heartbeats, then complete or fail the worker, and upload the worker's log (``worker.log``) and
system metrics (``metrics.jsonl``) as artifacts, as upstream does."""

from __future__ import annotations

import gzip
import inspect
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from pytest_benchsdk._base.coordination import DEFAULT_READY_POLL_INTERVAL_MS, StepCoordination
from pytest_benchsdk._config.models import Participant
from pytest_benchsdk._engine.executor import Executor, GroupPlan, IterationSpec
from pytest_benchsdk._engine.plans import context_call
from pytest_benchsdk.platform import BenchmarkClient, BenchmarkReporter, SystemMetricsCollector
from pytest_benchsdk.platform._barrier import PoolBarrier
from pytest_benchsdk.platform._metrics import samples_to_ndjson
from pytest_benchsdk.records import LOG_LEVELS, TaskRecord

__all__ = ["WorkerOptions", "WorkerResult", "run_worker"]

MAX_BATCH_SIZE = 5000


@attrs.frozen
class WorkerResult:
    """What :func:`run_worker` returns (upstream ``{assignment, records}``): the claimed
    assignment (``None`` when nothing was left to claim) and the records of its tasks."""

    assignment: Mapping[str, Any] | None
    records: tuple[TaskRecord, ...] = ()
    status: str = "completed"


def _non_negative(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"Benchmark {name} must be a non-negative integer.")
    return value


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    # Upstream's worker: missing/empty → default; non-integer or negative → default.
    try:
        value = int((env.get(name) or "").strip())
    except ValueError:
        return default
    return value if value >= 0 else default


def _positive(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"Benchmark {name} must be a positive integer.")
    return value


def run_worker(
    client: BenchmarkClient,
    *,
    benchmark_slug: str,
    run_id: str,
    participant_slug: str,
    task: Callable[..., Any],
    participant: Participant | None = None,
    process_kind: str | None = None,
    process_key: str | None = None,
    concurrency: int | None = None,
    batch_size: int = 1000,
    on_result: Callable[[TaskRecord], object] | None = None,
    on_finish: Callable[[Mapping[str, Any]], object] | None = None,
    log_level: str | None = None,
    max_log_lines: int | None = None,
    log_compression: str | bool | None = None,
    metrics_interval_ms: int | None = None,
    flush_interval_ms: int = 30_000,
    heartbeat_interval_ms: int = 30_000,
    ready_poll_interval_ms: float = DEFAULT_READY_POLL_INTERVAL_MS,
    log_flush_interval_ms: int | None = None,
    on_telemetry_error: Callable[[BaseException, str], object] | None = None,
) -> WorkerResult:
    """Claim a worker of ``participant_slug`` in run ``run_id`` and run its task range
    (upstream ``runWorker``): ``task`` takes the context parameters a bench file's task takes
    (``participant``, ``phase``, ``task_index``, ``step``, ``measure``, ``log``, ``bench``).
    Concurrency is the option, else the assignment's ``targetConcurrency``. Each record goes to
    ``on_result`` and the platform (batches of ``batch_size``, at most 5000); then
    ``on_finish({assignment, records, status, client, upload_artifact})`` (``upload_artifact``:
    the worker's :meth:`BenchmarkReporter.upload_artifact`), and the worker is completed, or
    failed with ``One or more tasks failed`` when a task failed. Last, the worker's ``log()``
    lines at or above ``log_level`` (default ``BENCHMARK_LOG_LEVEL``, else ``info``; at most
    ``max_log_lines``, default ``BENCHMARK_LOG_MAX_LINES``, else 100000) are uploaded as
    ``worker.log`` (gzipped with ``log_compression="gzip"``, default
    ``BENCHMARK_LOG_COMPRESSION``), and the system metrics sampled every
    ``metrics_interval_ms`` (default ``BENCHMARK_METRICS_INTERVAL_MS``, else 30000; 0: none)
    as ``metrics.jsonl``. While the tasks run: a heartbeat every ``heartbeat_interval_ms``
    (and on every step's start and end, coalesced, and after each task: the progress and the
    active steps), the records queued so far sent when ``flush_interval_ms`` has
    passed since the last batch, the new log lines uploaded every ``log_flush_interval_ms``
    (default ``BENCHMARK_LOG_FLUSH_INTERVAL_MS``, else 0: only at the end) — both checked as
    each task ends. A failed heartbeat, batch, artifact or finish calls
    ``on_telemetry_error(error, kind)`` (``kind``: ``heartbeat``, ``flush``, ``artifact``,
    ``finish``) instead of the ``[benchsdk] telemetry failure`` warning. A
    ``step(..., readiness="poll")`` waits until the platform says every worker of the
    participant has reached the step, asking every ``ready_poll_interval_ms`` (default 1000)
    unless the step names its own. Nothing to claim:
    ``assignment`` None and no further request. Upstream's messages for bad options
    (``ValueError``)."""
    options = WorkerOptions(
        benchmark_slug=benchmark_slug,
        run_id=run_id,
        participant_slug=participant_slug,
        task=task,
        participant=participant,
        process_kind=process_kind,
        process_key=process_key,
        concurrency=concurrency,
        batch_size=batch_size,
        on_result=on_result,
        on_finish=on_finish,
        log_level=log_level,
        max_log_lines=max_log_lines,
        log_compression=log_compression,
        metrics_interval_ms=metrics_interval_ms,
        flush_interval_ms=flush_interval_ms,
        heartbeat_interval_ms=heartbeat_interval_ms,
        ready_poll_interval_ms=ready_poll_interval_ms,
        log_flush_interval_ms=log_flush_interval_ms,
        on_telemetry_error=on_telemetry_error,
    )
    return _work(client, options, options.checked(os.environ))


@attrs.frozen(kw_only=True)
class WorkerOptions:
    """:func:`run_worker`'s options as given (upstream ``runWorker``'s options, snake_case):
    the parameter object behind its keywords, documented there."""

    benchmark_slug: str
    run_id: str
    participant_slug: str
    task: Callable[..., Any]
    participant: Participant | None = None
    process_kind: str | None = None
    process_key: str | None = None
    concurrency: int | None = None
    batch_size: int = 1000
    on_result: Callable[[TaskRecord], object] | None = None
    on_finish: Callable[[Mapping[str, Any]], object] | None = None
    log_level: str | None = None
    max_log_lines: int | None = None
    log_compression: str | bool | None = None
    metrics_interval_ms: int | None = None
    flush_interval_ms: int = 30_000
    heartbeat_interval_ms: int = 30_000
    ready_poll_interval_ms: float = DEFAULT_READY_POLL_INTERVAL_MS
    log_flush_interval_ms: int | None = None
    on_telemetry_error: Callable[[BaseException, str], object] | None = None

    def checked(self, env: Mapping[str, str]) -> _WorkerSettings:
        """The options checked (upstream's messages, ``ValueError``), and those left ``None``
        read from the ``BENCHMARK_*`` variables of ``env``, else upstream's defaults."""
        if self.concurrency is not None:
            _positive("concurrency", self.concurrency)
        _positive("batchSize", self.batch_size)
        if self.batch_size > MAX_BATCH_SIZE:
            raise ValueError("Benchmark batchSize must be at most 5000.")
        _positive("flushIntervalMs", self.flush_interval_ms)
        _positive("heartbeatIntervalMs", self.heartbeat_interval_ms)
        ready_poll_interval_ms = self.ready_poll_interval_ms
        if (
            not isinstance(ready_poll_interval_ms, (int, float))
            or isinstance(ready_poll_interval_ms, bool)
            or not 0 < ready_poll_interval_ms < float("inf")
        ):
            raise ValueError(
                "Benchmark readyPollIntervalMs must be a positive number "
                f"(got {ready_poll_interval_ms!r})."
            )
        log_flush_interval_ms = self.log_flush_interval_ms
        if log_flush_interval_ms is None:
            log_flush_interval_ms = _env_int(env, "BENCHMARK_LOG_FLUSH_INTERVAL_MS", 0)
        _non_negative("logFlushIntervalMs", log_flush_interval_ms)
        metrics_interval_ms = self.metrics_interval_ms
        if metrics_interval_ms is None:
            metrics_interval_ms = _env_int(env, "BENCHMARK_METRICS_INTERVAL_MS", 30_000)
        _non_negative("metricsIntervalMs", metrics_interval_ms)
        level = (self.log_level or env.get("BENCHMARK_LOG_LEVEL") or "info").strip().lower()
        max_log_lines = self.max_log_lines
        if max_log_lines is None:
            max_log_lines = _env_int(env, "BENCHMARK_LOG_MAX_LINES", 100_000)
        log_compression = self.log_compression
        if log_compression is None:
            compression = (env.get("BENCHMARK_LOG_COMPRESSION") or "").strip().lower()
            log_compression = compression == "gzip"
        return _WorkerSettings(
            level=level if level in LOG_LEVELS else "info",
            max_log_lines=max_log_lines,
            gzipped=log_compression is True or log_compression == "gzip",
            metrics_interval_ms=metrics_interval_ms,
            log_flush_interval_ms=log_flush_interval_ms,
        )


@attrs.frozen(kw_only=True)
class _WorkerSettings:
    """The worker's settings that :meth:`WorkerOptions.checked` resolves: the lowest log
    level kept, how many log lines at most, whether ``worker.log`` is gzipped, how often the
    system metrics are sampled and the log lines uploaded (0: never; only at the end)."""

    level: str
    max_log_lines: int
    gzipped: bool
    metrics_interval_ms: int
    log_flush_interval_ms: int


def _work(
    client: BenchmarkClient, options: WorkerOptions, settings: _WorkerSettings
) -> WorkerResult:
    """:func:`run_worker`'s loop: claim, run the tasks, report, finish."""
    o = options
    benchmark_slug, run_id, participant_slug = o.benchmark_slug, o.run_id, o.participant_slug
    task, participant, concurrency = o.task, o.participant, o.concurrency
    on_result, on_finish, on_telemetry_error = o.on_result, o.on_finish, o.on_telemetry_error
    flush_interval_ms, heartbeat_interval_ms = o.flush_interval_ms, o.heartbeat_interval_ms
    level, max_log_lines, gzipped = settings.level, settings.max_log_lines, settings.gzipped
    metrics_interval_ms = settings.metrics_interval_ms
    log_flush_interval_ms = settings.log_flush_interval_ms
    reporter = BenchmarkReporter.claim(
        benchmark_slug=benchmark_slug,
        run_id=run_id,
        participant_slug=participant_slug,
        process_kind=o.process_kind,
        process_key=o.process_key or socket.gethostname(),
        batch_size=o.batch_size,
        client=client,
    )
    if reporter is None:
        return WorkerResult(None, (), "unclaimed")
    assignment = reporter.worker_assignment
    workers = concurrency or int(assignment.get("targetConcurrency") or 1)
    _positive("concurrency", workers)
    who = participant if participant is not None else Participant(participant_slug)
    call = context_call(task, f"run_worker task of {participant_slug}")
    # The reporter is used by this thread, the heartbeat thread and readiness waits.
    lock = threading.Lock()
    heartbeats = _Heartbeats(reporter, lock, heartbeat_interval_ms / 1000)
    coordination = StepCoordination(
        workers,
        barrier=PoolBarrier(heartbeats, participant_slug, reporter.client),
        on_change=heartbeats.poke,
        ready_poll_interval_ms=o.ready_poll_interval_ms,
    )
    heartbeats.coordination = coordination
    start, count = reporter.task_index_start, reporter.task_count
    specs = [
        IterationSpec(
            key=index,
            participant=who,
            participant_name=participant_slug,
            phase=None,
            task_index=index,
            ordinal=ordinal,
            invoke=call,
            is_async=inspect.iscoroutinefunction(task),
            coordination=coordination,
        )
        for ordinal, index in enumerate(range(start, start + count))
    ]
    plan = GroupPlan.build(
        group_id=("worker", run_id, participant_slug),
        mode="participant",
        concurrency=workers,
        stagger_delay_ms=0,
        iterations=specs,
    )
    records: list[TaskRecord] = []
    log_lines: list[str] = []
    log_truncated = False
    logged = 0
    errors = 0
    reporter.on_telemetry_error = on_telemetry_error
    reporter.set_progress(done=0, in_flight=min(workers, count), errors=0)
    heartbeats.send()
    heartbeats.start()
    last_flush = last_log_flush = time.monotonic()
    collector = SystemMetricsCollector() if metrics_interval_ms > 0 else None
    if collector is not None:
        collector.sample()  # upstream's baseline
        collector.start(metrics_interval_ms / 1000)
    finish_info = {"client": reporter.client, "upload_artifact": reporter.upload_artifact}
    status = "completed"
    executor = Executor()
    try:
        futures = executor.start_group(plan)
        for spec in specs:
            outcome = futures[spec.key].result()
            record = outcome.record
            executor.release(plan.group_id, spec.key)
            for line in outcome.logs:
                line_level = line.level if line.level in LOG_LEVELS else "info"
                if LOG_LEVELS.index(line_level) < LOG_LEVELS.index(level):
                    continue
                if logged >= max_log_lines:
                    log_truncated = True
                    continue
                logged += 1
                log_lines.append(line.format())
            records.append(record)
            errors += record.status != "success"
            if on_result is not None:
                on_result(record)
            done = len(records)
            now = time.monotonic()
            with lock:
                reporter.record_result(record.to_wire())
                if done < count and now - last_flush >= flush_interval_ms / 1000:
                    reporter.flush(False)
                    last_flush = now
                if log_flush_interval_ms and now - last_log_flush >= log_flush_interval_ms / 1000:
                    _upload_log(reporter, log_lines, False, gzipped=gzipped)
                    log_lines = []
                    last_log_flush = now
                reporter.set_progress(
                    done=done, in_flight=min(workers, count - done), errors=errors
                )
            heartbeats.send()
        status = "failed" if errors else "completed"
    except BaseException as exc:
        status = "error"
        heartbeats.stop()
        executor.cancel_all()
        if on_finish is not None:
            _safe(
                on_finish,
                {"assignment": assignment, "records": records, "status": status, **finish_info},
            )
        reporter.finish(True, exc if isinstance(exc, Exception) else None)
        raise
    finally:
        heartbeats.stop()
        executor.shutdown()
        _upload_log(reporter, log_lines, log_truncated, gzipped=gzipped)
        if collector is not None:
            collector.stop()
            collector.sample()  # upstream's final sample
            reporter.upload_artifact(
                kind="system-metrics",
                content_type="application/x-ndjson",
                name="metrics.jsonl",
                body=samples_to_ndjson(collector.samples),
            )
    if on_finish is not None:
        on_finish(
            {"assignment": assignment, "records": tuple(records), "status": status, **finish_info}
        )
    reporter.finish(failed=bool(errors))
    return WorkerResult(assignment, tuple(records), status)


class _Heartbeats:
    """The worker's heartbeats, as upstream sends them: the progress and the active steps every
    ``interval_s`` while tasks run, and on every step start and end (coalesced: changes while
    one is being sent send one more). Also what the readiness barrier reads (a session's
    ``RunUpload`` plays that part there)."""

    def __init__(self, reporter: BenchmarkReporter, lock: threading.Lock, interval_s: float):
        self._reporter = reporter
        self._lock = lock
        self._interval_s = interval_s
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.coordination: StepCoordination | None = None

    @property
    def slug(self) -> str:
        return self._reporter.benchmark_slug

    def _steps(self) -> tuple[str | None, list[dict[str, Any]] | None]:
        if self.coordination is None:
            return None, None
        samples = self.coordination.samples()
        return (samples[0]["step"] if samples else None), samples

    def heartbeat_body(self, name: str) -> tuple[str, str, dict[str, Any]]:
        current, samples = self._steps()
        with self._lock:
            body = self._reporter.heartbeat_body(current_step=current, concurrency=samples)
        return self._reporter.run_id, self._reporter.worker_id, body

    def send(self) -> None:
        current, samples = self._steps()
        with self._lock:
            self._reporter.heartbeat(current_step=current, concurrency=samples)

    def poke(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="benchsdk-heartbeat")
        self._thread.start()

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            if self._stopped:
                return
            self.send()


def _upload_log(
    reporter: BenchmarkReporter, lines: list[str], truncated: bool, *, gzipped: bool
) -> None:
    """The worker's ``log()`` lines as its ``worker.log`` artifact (upstream's
    ``coordinator.log``), best effort."""
    if not lines:
        return
    text = "\n".join([*lines, *(["... (worker log truncated)"] if truncated else [])]) + "\n"
    reporter.upload_artifact(
        kind="coordinator.log",
        content_type="application/gzip" if gzipped else "text/plain",
        name="worker.log",
        body=gzip.compress(text.encode()) if gzipped else text,
    )


def _safe(action: Callable[[Mapping[str, Any]], object], value: Mapping[str, Any]) -> None:
    try:
        action(value)
    except Exception:  # the worker's own error is the one that propagates
        return
