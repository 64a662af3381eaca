"""Issue 34: the programmatic runs and ``pytest-benchsdk run`` as upstream's ``bench run``:
the per-task console lines, ``--provider ''``, ``check``, ``run_benchmark_worker``'s ``write=``
/ ``store=``. In-process runs of real tasks, real subprocesses of the command, and the loopback
platform for the ingest paths."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import cli
from helpers.platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk import (
    NoAvailableParticipantsError,
    Participant,
    TaskError,
    define_benchmark_config,
    parse_cli_args,
    run_benchmark,
)

RULE = "=" * 70


def _config(**fields: object) -> object:
    base: dict[str, object] = {
        "benchmark_slug": "parity",
        "benchmark_name": "Parity",
        "participants": [Participant("a"), Participant("b")],
        "iterations": 2,
    }
    base.update(fields)
    return define_benchmark_config(**base)


def _probing_task(participant: Participant, task_index: int, measure: object) -> None:
    if participant.name == "a" and task_index == 1:
        raise TaskError("probe went bad", code="probe_failed")
    measure(ms=10 + task_index)  # type: ignore[operator]


def _without_cpu(line: str) -> str:
    # cpu_ms is measured; the rest of a success line is the task's own data.
    return line.split(',"cpu_ms"')[0]


def test_participant_mode_prints_upstreams_per_task_lines() -> None:
    lines: list[str] = []
    run_benchmark(_config(), _probing_task, ["--dry-run"], store=None, write=lines.append)
    start = lines.index(RULE)
    end = lines.index("All done. No platform run created.")
    assert [_without_cpu(line) for line in lines[start - 1 : end]] == [
        "",
        RULE,
        "  Participant: a",
        RULE,
        '  [a] Task 1/2: success {"ms":10',
        "  [a] Task 2/2: FAILED — probe_failed: probe went bad",
        "  Done: 1/2 succeeded.",
        "",
        RULE,
        "  Participant: b",
        RULE,
        '  [b] Task 1/2: success {"ms":10',
        '  [b] Task 2/2: success {"ms":11',
        "  Done: 2/2 succeeded.",
        "",
    ]


def test_round_mode_prints_upstreams_interleaving_and_done_lines() -> None:
    lines: list[str] = []
    run_benchmark(
        _config(),
        _probing_task,
        ["--dry-run", "--group-by", "round"],
        store=None,
        write=lines.append,
    )
    start = lines.index("Interleaving 2 participant(s), 2 round(s) each.")
    end = lines.index("All done. No platform run created.")
    assert [_without_cpu(line) for line in lines[start:end]] == [
        "Interleaving 2 participant(s), 2 round(s) each.",
        "",
        '  [a] Task 1/2: success {"ms":10',
        '  [b] Task 1/2: success {"ms":10',
        "  [a] Task 2/2: FAILED — probe_failed: probe went bad",
        '  [b] Task 2/2: success {"ms":11',
        "  a: done (with errors).",
        "  b: done.",
        "",
    ]


def test_a_failure_without_code_or_message_is_upstreams_unknown_error() -> None:
    def task() -> None:
        raise TaskError("", code="")

    lines: list[str] = []
    run_benchmark(
        _config(participants=["a"], iterations=1),
        task,
        ["--dry-run"],
        store=None,
        write=lines.append,
    )
    assert "  [a] Task 1/1: FAILED — unknown error" in lines


@pytest.mark.slow
def test_the_per_task_lines_while_reporting_to_the_platform(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    lines: list[str] = []
    result = run_benchmark(
        _config(),
        _probing_task,
        [],
        base_url=loopback_platform.root_url,
        api_key=API_KEY,
        store=tmp_path / "s.sqlite3",
        write=lines.append,
    )
    assert result.run_id.startswith("run_")
    assert "  [a] Task 2/2: FAILED — probe_failed: probe went bad" in lines
    assert "  Done: 1/2 succeeded." in lines
    assert "  Done: 2/2 succeeded." in lines
    assert lines.count("  Participant: a") == 1
    failed = [r for p, r in loopback_platform.records(result.run_id) if r["status"] != "success"]
    assert [(r["taskIndex"], r["errorCode"]) for r in failed] == [(1, "probe_failed")]


# -- --provider '' -------------------------------------------------------------------------------


def test_an_empty_provider_selects_nobody_as_upstream() -> None:
    assert parse_cli_args(["--provider", ""], env={}).providers == ()
    assert parse_cli_args(["--provider=,"], env={}).providers == ()
    assert parse_cli_args([], env={}).providers is None
    ran: list[int] = []
    lines: list[str] = []
    with pytest.raises(NoAvailableParticipantsError) as info:
        run_benchmark(
            _config(),
            lambda task_index: ran.append(task_index),
            ["--provider", "", "--dry-run"],
            store=None,
            write=lines.append,
        )
    assert info.value.skipped == ()
    assert ran == []
    assert lines == []


BENCH_FILE = """\
from pytest_benchsdk import Participant, TaskError, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="cli-parity",
    benchmark_name="CLI parity",
    participants=[Participant("a"), Participant("b")],
    iterations=2,
)


@define_task
def task(participant, task_index, measure):
    if participant.name == "a" and task_index == 1:
        raise TaskError("probe went bad", code="probe_failed")
    measure(ms=1 + task_index)
"""


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "bench_parity.py").write_text(BENCH_FILE)
    return cli(*args, cwd=tmp_path)


def test_the_run_command_prints_the_code_and_message_of_a_failed_task(tmp_path: Path) -> None:
    done = _cli(tmp_path, "run", "bench_parity.py", "--dry-run", "--no-store")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert "  Participant: a" in out
    assert "  [a] Task 2/2: FAILED — probe_failed: probe went bad" in out
    assert "  Done: 1/2 succeeded." in out
    assert "  Done: 2/2 succeeded." in out


def test_the_run_command_with_an_empty_provider_runs_nobody_and_exits_0(tmp_path: Path) -> None:
    done = _cli(tmp_path, "run", "bench_parity.py", "--provider", "", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "No participants have their required env vars set \u2014 nothing to run."
    ]
    assert not (tmp_path / ".benchmarks").exists()


# -- check ---------------------------------------------------------------------------------------

CHECK_FILE = """\
from pytest_benchsdk import Participant, define_benchmark_config, define_task

def on_score(lower_is_better, higher_is_better):
    return {"metrics": []}  # upstream: "scoring spec needs at least one metric"

config = define_benchmark_config(
    benchmark_slug="check-me",
    benchmark_name="Check me",
    participants=[Participant("a"), Participant("keyed", required_env_vars=["CHECK_KEY"])],
    iterations=2,
    custom_cli_flags=["--region"],
    on_score=on_score if __import__("os").environ.get("BAD_SCORING") else None,
)


@define_task
def task(participant, measure):
    raise AssertionError("a check runs no iteration")
"""


def _check(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "bench_check.py").write_text(CHECK_FILE)
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BENCHMARKS_PLATFORM_", "BENCHSDK_")) and k != "CHECK_KEY"
    }
    environ["HOME"] = str(tmp_path)  # no saved credentials
    return cli(*args, cwd=tmp_path, env={**environ, **env})


CHECK_REPORT = """\
{
  "file": "bench_check.py",
  "benchmarkSlug": "check-me",
  "apiOk": true,
  "envOk": true,
  "participants": {
    "requested": [
      "a",
      "keyed"
    ],
    "available": [
      "a"
    ],
    "skipped": [
      {
        "name": "keyed",
        "missing": [
          "CHECK_KEY"
        ]
      }
    ]
  }
}
"""


def test_check_prints_upstreams_report_in_a_dry_run(tmp_path: Path) -> None:
    done = _check(tmp_path, "check", "bench_check.py", "--dry-run", "--region", "eu")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == CHECK_REPORT
    assert not (tmp_path / ".benchmarks").exists()


def test_run_check_and_validate_are_check(tmp_path: Path) -> None:
    for flag in ("--check", "--validate"):
        done = _check(tmp_path, "run", "bench_check.py", flag, "--dry-run", "--store", "x.db")
        assert (done.returncode, done.stderr) == (0, ""), flag
        assert done.stdout == CHECK_REPORT
    assert not (tmp_path / "x.db").exists()


def test_check_lists_one_benchmark_on_the_platform(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    done = _check(
        tmp_path,
        "check",
        "bench_check.py",
        "--base-url",
        loopback_platform.root_url,
        f"--api-key={API_KEY}",
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == CHECK_REPORT
    (listed,) = loopback_platform.calls("list_benchmarks")
    assert listed.query == {"limit": ["1"]}
    assert listed.headers["authorization"] == f"Bearer {API_KEY}"


def test_check_fails_when_the_platform_refuses(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    loopback_platform.fault("list_benchmarks", status=403, body={"error": "nope"})
    done = _check(
        tmp_path,
        "check",
        "bench_check.py",
        "--base-url",
        loopback_platform.root_url,
        "--api-key",
        API_KEY,
    )
    assert done.returncode == 1
    assert '"apiOk": false' in done.stdout
    warning, failed = done.stderr.splitlines()
    assert warning.startswith("[benchsdk] API connectivity check failed: ")
    assert "403" in warning
    assert failed == (
        "Benchmark failed: Error: Benchmark check failed. See warnings above for details."
    )
    assert API_KEY not in done.stdout + done.stderr


def test_check_without_credentials_fails_with_upstreams_warnings(tmp_path: Path) -> None:
    done = _check(tmp_path, "check", "bench_check.py")
    assert done.returncode == 1
    assert '"apiOk": false,\n  "envOk": false,' in done.stdout
    lines = done.stderr.splitlines()
    assert lines[0].startswith("[benchsdk] API connectivity check failed: No credentials found.")
    assert lines[1:] == [
        "[benchsdk] BENCHMARKS_PLATFORM_API_KEY or BENCHMARKS_PLATFORM_TOKEN is not set",
        "Benchmark failed: Error: Benchmark check failed. See warnings above for details.",
    ]


def test_check_fails_on_bad_scoring_and_on_no_available_participant(tmp_path: Path) -> None:
    done = _check(tmp_path, "check", "bench_check.py", "--dry-run", BAD_SCORING="1")
    assert done.returncode == 1
    assert '"scoringOk": false' in done.stdout
    assert done.stderr.startswith("[benchsdk] Scoring validation failed: ")
    done = _check(tmp_path, "check", "bench_check.py", "--dry-run", "--provider", "keyed")
    assert done.returncode == 1
    assert '"available": [],' in done.stdout
    assert done.stderr.endswith("Benchmark check failed. See warnings above for details.\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--provider", "zz"),
            "Benchmark failed: ValueError: Participant selection failed: "
            "Unknown participant(s): zz. Available: a, keyed",
        ),
        (
            ("--shape", "big"),
            'Benchmark failed: UnknownShapeError: Unknown --shape "big": '
            "this benchmark declares no shapes.",
        ),
        (("--wat",), "Benchmark failed: ValueError: Unknown flag(s): --wat"),
    ],
)
def test_check_rejects_what_upstream_rejects(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = _check(tmp_path, "check", "bench_check.py", "--dry-run", *args)
    assert done.returncode == 1
    assert (done.stdout, done.stderr) == ("", message + "\n")


# -- round mode's system metrics -----------------------------------------------------------------


@pytest.mark.slow
def test_two_rounds_give_upstreams_four_metrics_lines(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    import time

    def slow_task(participant: Participant, task_index: int, measure: object) -> None:
        time.sleep(0.05)  # ten periodic samples' worth
        _probing_task(participant, task_index, measure)

    result = run_benchmark(
        _config(),
        slow_task,
        ["--group-by", "round"],
        base_url=loopback_platform.root_url,
        api_key=API_KEY,
        store=tmp_path / "s.sqlite3",
        write=lambda line: None,
        # The process samples every 5 ms meanwhile; round mode's artifact holds upstream's
        # samples only, as upstream's runner has no periodic sampler.
        env={**os.environ, "BENCHMARK_METRICS_INTERVAL_MS": "5"},
    )
    (metrics,) = [
        a
        for a in loopback_platform.uploaded_artifacts(result.run_id)
        if a["kind"] == "system-metrics"
    ]
    assert metrics["metadata"]["scope"] == "shared-process"
    # One baseline, one per round, one final.
    assert len(metrics["content"].splitlines()) == 4


# -- run_benchmark_worker's write= / store= --------------------------------------------------------


def test_run_benchmark_worker_takes_write_and_store(
    loopback_platform: LoopbackPlatform,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import inspect

    from pytest_benchsdk import run_benchmark_worker
    from pytest_benchsdk.store import ResultStore

    parameters = inspect.signature(run_benchmark_worker).parameters
    assert {"write", "store", "env"} <= set(parameters)
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    store = tmp_path / "kept" / "w.sqlite3"
    store.parent.mkdir()
    result = run_benchmark_worker(
        benchmark_slug="sandbox-pool",
        participant="solo",
        task=lambda task_index, measure: measure(ms=task_index),
        iterations=2,
        run_key="ci-123",
        worker_pool=3,
        close_after_ms=86_400_000,
        store=store,
        write=lines.append,
        base_url=loopback_platform.root_url,
        api_key=API_KEY,
    )
    assert capsys.readouterr().out == ""
    assert not (tmp_path / ".benchmarks").exists()
    assert "  [solo] Task 1/2: success" in [_without_cpu(line).split(" {")[0] for line in lines]
    with ResultStore(store) as kept:
        (run,) = kept.list_runs()
        (records,) = kept.participant_records(run.run_id)
    assert len(records.records) == 2
    # A success record has no error code: None from Python, no key on the wire.
    assert [(r.status, r.error_code) for r in records.records] == [("success", None)] * 2
    assert all("errorCode" not in r.to_wire() for r in records.records)
    # Upstream's own test of runBenchmarkWorker (reference §9.3).
    (create,) = loopback_platform.calls("create_run")
    assert create.json["runKey"] == "ci-123"
    assert create.json["config"]["closeAfterMs"] == 86_400_000
    (participant,) = [c.json for c in loopback_platform.calls("upsert_participant")]
    assert participant == {"totalTasks": 6, "workerCount": 3}
    assert len(loopback_platform.records(result.run_id)) == 2


# -- run_worker: on_finish's client and upload_artifact, the log and metrics artifacts ----------


def _qd_worker(client: object, run_id: str, task: object, **options: object) -> Any:
    """``run_worker`` as participant ``p1`` of benchmark ``qd`` (the loopback platform's)."""
    from pytest_benchsdk import run_worker

    return run_worker(
        client,  # type: ignore[arg-type]
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        task=task,  # type: ignore[arg-type]
        **options,  # type: ignore[arg-type]
    )


def _planned_worker_run(client: object, tasks: int) -> str:
    client.upsert_benchmark("qd", {"name": "Queue driven"})  # type: ignore[attr-defined]
    run = client.create_run("qd", {"config": {"iterations": tasks}})  # type: ignore[attr-defined]
    run_id = str(run["run"]["id"]) if "run" in run else str(run["id"])
    client.upsert_participant(  # type: ignore[attr-defined]
        "qd", run_id, "p1", {"totalTasks": tasks, "workerCount": 1}
    )
    client.plan_workers(  # type: ignore[attr-defined]
        "qd", run_id, "p1", {"workerCount": 1, "targetConcurrency": 1}
    )
    return run_id


def test_on_finish_gets_the_client_and_uploads_its_own_artifact(
    loopback_platform: LoopbackPlatform, platform_client: object, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.delenv("BENCHMARK_LOG_LEVEL", raising=False)
    monkeypatch.delenv("BENCHMARK_LOG_COMPRESSION", raising=False)
    run_id = _planned_worker_run(platform_client, tasks=3)
    seen: dict[str, object] = {}

    def on_finish(info: dict[str, object]) -> None:
        seen.update(info)
        upload = info["upload_artifact"]
        upload(kind="report", body="hello", content_type="text/plain", name="r.txt")  # type: ignore[operator]

    def task(task_index: int, measure: object, log: object) -> None:
        log(f"debug {task_index}", {"level": "debug"})  # type: ignore[operator]
        log(f"info {task_index}")  # type: ignore[operator]
        measure(ms=task_index)  # type: ignore[operator]

    result = _qd_worker(
        platform_client,
        run_id,
        task,
        on_finish=on_finish,
        max_log_lines=2,
        metrics_interval_ms=600_000,
    )
    assert result.status == "completed"
    assert seen["client"] is platform_client
    assert set(seen) == {"assignment", "records", "status", "client", "upload_artifact"}
    artifacts = {a["kind"]: a for a in loopback_platform.uploaded_artifacts(run_id)}
    assert set(artifacts) == {"report", "coordinator.log", "system-metrics"}
    assert artifacts["report"]["content"] in ("hello", b"hello")
    log = artifacts["coordinator.log"]
    assert (log["name"], log["contentType"]) == ("worker.log", "text/plain")
    text = log["content"] if isinstance(log["content"], str) else log["content"].decode()
    lines = text.splitlines()
    # The debug lines are under the default level; two lines at most, then the note.
    assert [line.split("] ", 2)[-1] for line in lines[:2]] == ["info 0", "info 1"]
    assert lines[2:] == ["... (worker log truncated)"]
    metrics = artifacts["system-metrics"]
    assert (metrics["name"], metrics["contentType"]) == ("metrics.jsonl", "application/x-ndjson")
    body = (
        metrics["content"] if isinstance(metrics["content"], str) else metrics["content"].decode()
    )
    assert len(body.splitlines()) == 2  # a baseline and a final sample


def test_run_worker_gzips_its_log_and_rejects_a_negative_metrics_interval(
    loopback_platform: LoopbackPlatform, platform_client: object
) -> None:
    import gzip

    from pytest_benchsdk import run_worker

    with pytest.raises(ValueError) as info:
        run_worker(
            platform_client,  # type: ignore[arg-type]
            benchmark_slug="qd",
            run_id="r",
            participant_slug="p1",
            task=lambda: None,
            metrics_interval_ms=-1,
        )
    assert str(info.value) == "Benchmark metricsIntervalMs must be a non-negative integer."
    run_id = _planned_worker_run(platform_client, tasks=1)
    run_worker(
        platform_client,  # type: ignore[arg-type]
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        task=lambda log: log("zipped"),
        log_compression="gzip",
        metrics_interval_ms=0,
    )
    (log,) = loopback_platform.uploaded_artifacts(run_id)
    assert log["contentType"] == "application/gzip"
    raw = log["content"] if isinstance(log["content"], bytes) else log["content"].encode("latin-1")
    assert gzip.decompress(raw).decode().rstrip("\n").endswith("zipped")


def test_run_worker_heartbeats_on_its_interval_while_a_task_runs(
    loopback_platform: LoopbackPlatform, platform_client: object
) -> None:
    import time

    run_id = _planned_worker_run(platform_client, tasks=1)
    seen: list[int] = []

    def task() -> None:
        # Waits for two heartbeats the worker sends on its own while this task runs (an event,
        # not a duration: the generous deadline only bounds a broken build).
        start = len(loopback_platform.calls("heartbeat"))
        deadline = time.monotonic() + 60
        while len(loopback_platform.calls("heartbeat")) < start + 2:
            assert time.monotonic() < deadline, "no periodic heartbeat"
            time.sleep(0.01)
        seen.append(len(loopback_platform.calls("heartbeat")) - start)

    result = _qd_worker(
        platform_client,
        run_id,
        task,
        heartbeat_interval_ms=20,
        metrics_interval_ms=0,
    )
    assert result.status == "completed"
    assert seen
    assert seen[0] >= 2


def test_run_worker_flushes_batches_and_logs_on_their_intervals(
    loopback_platform: LoopbackPlatform, platform_client: object
) -> None:
    from pytest_benchsdk import run_worker

    run_id = _planned_worker_run(platform_client, tasks=3)
    result = run_worker(
        platform_client,  # type: ignore[arg-type]
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        task=lambda task_index, log: log(f"line {task_index}"),
        flush_interval_ms=1,
        log_flush_interval_ms=1,
        metrics_interval_ms=0,
    )
    assert result.assignment is not None
    batches = loopback_platform.events_for(str(result.assignment["workerId"]))
    # A partial batch after each of the first two tasks, the last one final.
    assert [(n, len(batches[n]["records"]), batches[n]["isFinal"]) for n in sorted(batches)] == [
        (0, 1, False),
        (1, 1, False),
        (2, 1, True),
    ]
    logs = [a for a in loopback_platform.uploaded_artifacts(run_id) if a["name"] == "worker.log"]
    texts = [a["content"] if isinstance(a["content"], str) else a["content"].decode() for a in logs]
    assert [t.strip().rsplit(" ", 1)[-1] for t in texts] == ["0", "1", "2"]


def test_run_worker_hands_telemetry_failures_to_on_telemetry_error(
    loopback_platform: LoopbackPlatform,
    platform_client: object,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pytest_benchsdk import run_worker
    from pytest_benchsdk.platform import BenchmarkApiError

    run_id = _planned_worker_run(platform_client, tasks=2)
    loopback_platform.fault("heartbeat", status=500, times=None)
    failures: list[tuple[type[BaseException], str]] = []
    result = run_worker(
        platform_client,  # type: ignore[arg-type]
        benchmark_slug="qd",
        run_id=run_id,
        participant_slug="p1",
        task=lambda measure: measure(ms=1),
        metrics_interval_ms=0,
        on_telemetry_error=lambda error, kind: failures.append((type(error), kind)),
    )
    assert result.status == "completed"
    assert failures
    assert set(failures) == {(BenchmarkApiError, "heartbeat")}
    assert "telemetry failure" not in capsys.readouterr().err


def _pooled_worker_run(client: object, workers: int) -> str:
    client.upsert_benchmark("qd", {"name": "Queue driven"})  # type: ignore[attr-defined]
    run = client.create_run("qd", {"config": {"iterations": workers}})  # type: ignore[attr-defined]
    run_id = str(run["run"]["id"]) if "run" in run else str(run["id"])
    client.upsert_participant(  # type: ignore[attr-defined]
        "qd", run_id, "p1", {"totalTasks": workers, "workerCount": workers}
    )
    client.plan_workers(  # type: ignore[attr-defined]
        "qd", run_id, "p1", {"workerCount": workers, "targetConcurrency": 1}
    )
    return run_id


def test_run_workers_of_one_pool_meet_at_a_poll_step(
    loopback_platform: LoopbackPlatform, platform_client: object
) -> None:
    """Two workers of one participant, each in its own thread as on two machines: neither
    passes a ``readiness="poll"`` step before the platform says both have reached it."""
    import json
    import threading

    run_id = _pooled_worker_run(platform_client, workers=2)
    arrived: list[int] = []
    passed: list[tuple[int, int]] = []
    lock = threading.Lock()

    def task(task_index: int, step: object) -> None:
        with lock:
            arrived.append(task_index)

        def through() -> None:
            with lock:
                passed.append((task_index, len(arrived)))

        step("meet", through, readiness="poll", ready_timeout_ms=60_000)  # type: ignore[operator]

    results: list[object] = []

    def worker() -> None:
        results.append(
            _qd_worker(
                platform_client,
                run_id,
                task,
                ready_poll_interval_ms=20,
                metrics_interval_ms=0,
            )
        )

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [r.status for r in results] == ["completed", "completed"]  # type: ignore[attr-defined]
    # Each passed the step only once both had arrived at it.
    assert sorted(n for _, n in passed) == [2, 2]
    beats = [json.loads(c.body) for c in loopback_platform.calls("heartbeat")]
    assert any(
        b.get("currentStep") == "meet"
        and {"step": "meet", "active": 1, "target": 1} in b.get("concurrency", [])
        for b in beats
    )


@pytest.mark.slow
def test_run_worker_asks_whether_a_step_is_ready_every_ready_poll_interval_ms(
    loopback_platform: LoopbackPlatform, platform_client: object
) -> None:
    """One of two planned workers runs: its poll step is never ready, and it asks on the
    worker's interval until the step's own ready timeout."""
    from pytest_benchsdk import run_worker

    run_id = _pooled_worker_run(platform_client, workers=2)
    with pytest.raises(ValueError) as info:
        run_worker(
            platform_client,  # type: ignore[arg-type]
            benchmark_slug="qd",
            run_id=run_id,
            participant_slug="p1",
            task=lambda: None,
            ready_poll_interval_ms=0,
        )
    assert str(info.value) == "Benchmark readyPollIntervalMs must be a positive number (got 0)."

    def task(step: object) -> None:
        step("meet", lambda: None, readiness="poll", ready_timeout_ms=1500)  # type: ignore[operator]

    before = len(loopback_platform.calls("progress"))
    result = _qd_worker(
        platform_client,
        run_id,
        task,
        ready_poll_interval_ms=50,
        metrics_interval_ms=0,
    )
    polls = len(loopback_platform.calls("progress")) - before
    (record,) = result.records
    assert record.status == "error"
    assert record.error_code == "step_ready_timeout"
    assert [(st.name, st.status) for st in record.steps or ()] == [("meet", "error")]
    (log,) = loopback_platform.uploaded_artifacts(run_id)
    text = log["content"] if isinstance(log["content"], str) else log["content"].decode()
    assert 'Timed out waiting for benchmark step "meet" to become ready.' in text
    # Upstream's default (1000 ms) asks twice in 1.5 s; 50 ms asks about 30 times (a loaded
    # machine answers slower, hence the margin).
    assert polls >= 5


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"flush_interval_ms": 0}, "Benchmark flushIntervalMs must be a positive integer."),
        ({"heartbeat_interval_ms": 0}, "Benchmark heartbeatIntervalMs must be a positive integer."),
        (
            {"log_flush_interval_ms": -1},
            "Benchmark logFlushIntervalMs must be a non-negative integer.",
        ),
    ],
)
def test_run_worker_rejects_bad_intervals_with_upstreams_messages(
    platform_client: object, option: dict[str, int], message: str
) -> None:
    from pytest_benchsdk import run_worker

    with pytest.raises(ValueError) as info:
        run_worker(
            platform_client,  # type: ignore[arg-type]
            benchmark_slug="qd",
            run_id="r",
            participant_slug="p1",
            task=lambda: None,
            **option,  # type: ignore[arg-type]
        )
    assert str(info.value) == message


@pytest.mark.slow
def test_a_participant_whose_pool_is_full_gets_no_done_line(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    runs: list[list[str]] = []
    for attempt in range(2):
        lines: list[str] = []
        run_benchmark(
            _config(participants=["a"]),
            lambda measure: measure(ms=1),
            ["--run-key", "pool-1", "--worker-pool", "1"],
            base_url=loopback_platform.root_url,
            api_key=API_KEY,
            store=tmp_path / f"s{attempt}.sqlite3",
            write=lines.append,
        )
        runs.append(lines)
    first, second = runs
    assert "  Done: 2/2 succeeded." in first
    assert "  Participant: a" in second
    assert not any(line.startswith("  Done:") or "Task " in line for line in second)
