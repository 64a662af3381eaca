"""Upstream's ``runWorker(client, options)``: the loop of a queue-driven worker.
Claim one worker of a platform run, run the claimed task indices with the plugin's executor
(the same pool, stagger and step context as every run), send the records in batches with
heartbeats, then complete or fail the worker. (Upstream also uploads the worker's log and
system metrics as artifacts; this loop does not: use :meth:`BenchmarkReporter.upload_artifact`
from ``on_finish`` where they are wanted.)"""

from __future__ import annotations

import inspect
import socket
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from pytest_benchsdk._config.models import Participant
from pytest_benchsdk._engine.executor import Executor, GroupPlan, IterationSpec
from pytest_benchsdk._engine.plans import context_call
from pytest_benchsdk.platform import BenchmarkClient, BenchmarkReporter
from pytest_benchsdk.records import TaskRecord

__all__ = ["WorkerResult", "run_worker"]

MAX_BATCH_SIZE = 5000


@attrs.frozen
class WorkerResult:
    """What :func:`run_worker` returns (upstream ``{assignment, records}``): the claimed
    assignment (``None`` when nothing was left to claim) and the records of its tasks."""

    assignment: Mapping[str, Any] | None
    records: tuple[TaskRecord, ...] = ()
    status: str = "completed"


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
) -> WorkerResult:
    """Claim a worker of ``participant_slug`` in run ``run_id`` and run its task range
    (upstream ``runWorker``): ``task`` takes the context parameters a bench file's task takes
    (``participant``, ``phase``, ``task_index``, ``step``, ``measure``, ``log``, ``bench``).
    Concurrency is the option, else the assignment's ``targetConcurrency``. Each record goes to
    ``on_result`` and the platform (batches of ``batch_size``, at most 5000); then
    ``on_finish({assignment, records, status})``, and the worker is completed, or failed with
    ``One or more tasks failed`` when a task failed. Nothing to claim: ``assignment`` None and
    no further request. Upstream's messages for bad options (``ValueError``)."""
    if concurrency is not None:
        _positive("concurrency", concurrency)
    _positive("batchSize", batch_size)
    if batch_size > MAX_BATCH_SIZE:
        raise ValueError("Benchmark batchSize must be at most 5000.")
    reporter = BenchmarkReporter.claim(
        benchmark_slug=benchmark_slug,
        run_id=run_id,
        participant_slug=participant_slug,
        process_kind=process_kind,
        process_key=process_key or socket.gethostname(),
        batch_size=batch_size,
        client=client,
    )
    if reporter is None:
        return WorkerResult(None, (), "unclaimed")
    assignment = reporter.worker_assignment
    workers = concurrency or int(assignment.get("targetConcurrency") or 1)
    _positive("concurrency", workers)
    who = participant if participant is not None else Participant(participant_slug)
    call = context_call(task, f"run_worker task of {participant_slug}")
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
    errors = 0
    reporter.set_progress(done=0, in_flight=min(workers, count), errors=0)
    reporter.heartbeat()
    status = "completed"
    executor = Executor()
    try:
        futures = executor.start_group(plan)
        for spec in specs:
            record = futures[spec.key].result().record
            executor.release(plan.group_id, spec.key)
            records.append(record)
            errors += record.status != "success"
            if on_result is not None:
                on_result(record)
            reporter.record_result(record.to_wire())
            done = len(records)
            reporter.set_progress(done=done, in_flight=min(workers, count - done), errors=errors)
            reporter.heartbeat()
        status = "failed" if errors else "completed"
    except BaseException as exc:
        status = "error"
        executor.cancel_all()
        if on_finish is not None:
            _safe(on_finish, {"assignment": assignment, "records": records, "status": status})
        reporter.finish(True, exc if isinstance(exc, Exception) else None)
        raise
    finally:
        executor.shutdown()
    if on_finish is not None:
        on_finish({"assignment": assignment, "records": tuple(records), "status": status})
    reporter.finish(failed=bool(errors))
    return WorkerResult(assignment, tuple(records), status)


def _safe(action: Callable[[Mapping[str, Any]], object], value: Mapping[str, Any]) -> None:
    try:
        action(value)
    except Exception:  # the worker's own error is the one that propagates
        return
