"""Helpers for platform tests (no fixtures here: see ``platform_fixtures``)."""

from __future__ import annotations

import gzip

from pytest_benchsdk._base.runenv import RunEnvironment, Trigger
from pytest_benchsdk.platform import BenchmarkClient, RetryPolicy
from pytest_benchsdk.store import ResultStore

__all__ = ["FAST_RETRY", "new_local_run", "seed_run"]

#: Backoff fast enough for tests; still exponential with jitter.
FAST_RETRY = RetryPolicy(base_delay_s=0.01, max_delay_s=0.05, offline_after_s=1.5)

_ENV = RunEnvironment(
    git_sha=None,
    git_ref=None,
    trigger=Trigger(source="manual"),
    python_version="3.10.0",
    implementation="CPython",
    platform="linux",
    arch="x64",
    machine="x86_64",
    hostname="test-host",
)


def new_local_run(
    store: ResultStore, slug: str = "sandbox-tti", participants: tuple[str, ...] = ("e2b",)
) -> str:
    """A local run in ``store`` (what the plugin creates per benchmark)."""
    return store.begin_run(
        benchmark_slug=slug,
        benchmark_name=slug,
        file=None,
        knobs={},
        participants=participants,
        config_snapshot={},
        environment=_ENV,
        dry_run=False,
    )


def seed_run(
    client: BenchmarkClient,
    slug: str = "sandbox-tti",
    participants: tuple[str, ...] = ("e2b", "modal"),
    *,
    log_lines: tuple[str, ...] = (),
    gzip_log: bool = False,
) -> tuple[str, dict[str, dict[str, object]]]:
    """A finished platform run of two iterations per participant, through the real API: each
    record has the steps ``create`` and ``exec`` (``exec`` fails in ``modal``'s second
    iteration), each worker a ``worker.log`` (``log_lines``, gzipped with ``gzip_log``) and a
    ``metrics.jsonl``. Returns the run id and each participant's assignment."""
    client.upsert_benchmark(slug, {"name": "Sandbox TTI"})
    created = client.create_run(
        slug, {"totalTasks": 2, "workerCount": 1, "participants": list(participants)}
    )
    run_id = str(created["run"]["id"])
    assignments: dict[str, dict[str, object]] = {}
    for participant in participants:
        client.plan_workers(slug, run_id, participant)
        assignment = client.claim_worker(slug, run_id, participant, {"processKind": "process"})
        assert assignment is not None
        assignments[participant] = assignment
        worker, attempt = str(assignment["workerId"]), str(assignment["attemptId"])
        records = []
        for index in range(2):
            failed = participant == "modal" and index == 1
            records.append(
                {
                    "taskIndex": index,
                    "status": "error" if failed else "success",
                    "startedAt": f"2026-01-02T03:04:0{index}.000Z",
                    "completedAt": f"2026-01-02T03:04:0{index}.500Z",
                    "latencyMs": 100 + index * 10,
                    **({"errorCode": "boom"} if failed else {}),
                    "data": {"ttiMs": 80 + index},
                    "steps": [
                        {
                            "name": "create",
                            "status": "success",
                            "latencyMs": 60,
                            "data": {"sandboxId": f"sb-{index}"},
                        },
                        {
                            "name": "exec",
                            "status": "error" if failed else "success",
                            "latencyMs": 40,
                        },
                    ],
                }
            )
        client.submit_task_results(
            slug,
            run_id,
            worker,
            {"attemptId": attempt, "sequenceNumber": 0, "isFinal": True, "records": records},
        )
        text = "".join(line + "\n" for line in log_lines)
        if text:
            body: bytes | str = gzip.compress(text.encode()) if gzip_log else text
            client.upload_artifact(
                slug,
                run_id,
                worker,
                attempt_id=attempt,
                kind="coordinator.log",
                body=body,
                content_type="application/gzip" if gzip_log else "text/plain",
                name="worker.log",
            )
        client.upload_artifact(
            slug,
            run_id,
            worker,
            attempt_id=attempt,
            kind="system-metrics",
            body='{"ts":"2026-01-02T03:04:00.000Z","memRssMb":50}\n',
            content_type="application/x-ndjson",
            name="metrics.jsonl",
        )
        client.complete_worker(slug, run_id, worker, attempt)
    return run_id, assignments
