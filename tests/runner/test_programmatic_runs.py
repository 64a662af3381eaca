"""Programmatic runs without pytest: ``run_benchmark`` and ``python -m pytest_benchsdk run``.

In-process runs of real configs and tasks (the store read back), the loopback platform with the
requests asserted, and real subprocesses for the command line (exit status, stdout, stderr)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import cli
from helpers.platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk import (
    NoAvailableParticipantsError,
    Participant,
    Phase,
    TaskError,
    define_benchmark_config,
    parse_cli_args,
    run_benchmark,
    run_benchmark_worker,
)
from pytest_benchsdk.store import ResultStore

SCORING = {
    "metrics": [
        {"key": "ms", "unit": "ms", "ceiling": 100, "weights": {"median": 1, "p95": 0, "p99": 0}}
    ]
}


def _config(**fields: object) -> object:
    base: dict[str, object] = {
        "benchmark_slug": "prog",
        "benchmark_name": "Programmatic",
        "participants": [Participant("a"), Participant("b")],
        "iterations": 3,
        "scoring": SCORING,
    }
    base.update(fields)
    return define_benchmark_config(**base)


def _task(participant: Participant, task_index: int, step: object, measure: object) -> None:
    measure(ms=10 + task_index + (5 if participant.name == "b" else 0))  # type: ignore[operator]


def test_a_dry_run_returns_records_scores_and_the_summary_and_stores_them(
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    store = tmp_path / "s.sqlite3"
    result = run_benchmark(_config(), _task, ["--dry-run"], store=store, write=lines.append)
    assert result.run_id == "no-ingest"
    assert result.dashboard_url == ""
    assert [p.participant for p in result.participants] == ["a", "b"]
    assert [r.data["ms"] for r in result.participants[0].records] == [10, 11, 12]
    assert result.scores is not None
    assert [s.provider for s in result.scores] == ["a", "b"]
    assert result.summary is not None
    assert result.summary.status.state == "passed"
    assert result.passed
    assert result.errors == ()
    assert "benchsdk: Dry run: no platform ingest or reporting." in lines
    assert "All done. No platform run created." in lines
    assert f"Results stored in {store}" in lines
    with ResultStore(store) as kept:
        records = kept.participant_records(result.store_run_id)
        assert [(p.participant, len(p.records)) for p in records] == [("a", 3), ("b", 3)]
        (run,) = kept.list_runs()
        assert run.status == "passed"


def test_flags_are_upstreams_and_shape_the_run(tmp_path: Path) -> None:
    lines: list[str] = []
    config = _config(phases=[Phase("cold", 1), Phase("warm", 1)], iterations=None)
    result = run_benchmark(
        config,
        _task,
        ["--provider", "b", "--iterations=2", "--concurrency", "2", "--dry-run"],
        store=None,
        write=lines.append,
    )
    assert [p.participant for p in result.participants] == ["b"]
    assert result.config.iterations == 4  # two phases of the --iterations 2 each
    assert result.config.concurrency == 2
    assert "  Knobs: iterations=4, concurrency=2, staggerDelayMs=0, groupBy=participant" in lines
    assert not any("Results stored" in line for line in lines)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--iterations", "0"], '--iterations expects an integer >= 1 (got "0")'),
        (["--concurrency="], "--concurrency expects a value"),
        (["--stagger-delay-ms", "-1"], '--stagger-delay-ms expects a number >= 0 (got "-1")'),
        (["--group-by", "x"], "--group-by expects 'participant' or 'round' (got \"x\")"),
        (["--benchmark", "Bad"], '--benchmark expects a lowercase benchmark slug (got "Bad")'),
        (["--slug", "Bad"], '--slug expects a lowercase benchmark slug (got "Bad")'),
        (["--name", " "], "--name expects a value"),
        (["--worker-pool", "2"], "--worker-pool requires --run-key"),
        (["--wat", "3", "stray", "--x=1"], "Unknown flag(s): --wat, stray, --x"),
    ],
)
def test_parse_cli_args_has_upstreams_messages(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_cli_args(argv, env={})
    assert str(info.value) == message


def test_parse_cli_args_values() -> None:
    args = parse_cli_args(
        [
            "--provider",
            " a, ,b",
            "--provider=c",
            "--iterations",
            "0x10",
            "--stagger-delay-ms",
            "1e2",
            "--region",
            "eu",
            "--fast",
            "--run-key",
            "-k1",
            "--worker-pool",
            "2",
        ],
        ["--region", "--fast"],
        env={"BENCHSDK_NO_INGEST": "TRUE"},
    )
    assert args.providers == ("a", "b", "c")
    assert (args.iterations, args.stagger_delay_ms) == (16, 100)
    # A value flag without "=" takes the next token even when it starts with "-".
    assert (args.run_key, args.worker_pool) == ("-k1", 2)
    assert args.custom == {"region": "eu", "fast": ""}
    assert args.no_ingest is True


def test_no_available_participant_raises_upstreams_error_after_the_skip_lines() -> None:
    lines: list[str] = []
    config = _config(participants=[Participant("a", required_env_vars=["NEED_A_KEY"])])
    with pytest.raises(NoAvailableParticipantsError) as info:
        run_benchmark(config, _task, ["--dry-run"], store=None, write=lines.append, env={})
    assert lines == ["Skipping a: missing NEED_A_KEY"]
    assert str(info.value) == (
        "No participants have their required env vars set \u2014 nothing to run (skipped: a)."
    )


def test_an_unknown_participant_is_upstreams_error() -> None:
    with pytest.raises(ValueError, match=r"Unknown participant\(s\): zz. Available: a, b"):
        run_benchmark(_config(), _task, ["--provider", "zz", "--dry-run"], store=None)


def test_failed_iterations_are_data_and_on_complete_gets_the_outcome(tmp_path: Path) -> None:
    seen: list[object] = []

    def task(participant: Participant, task_index: int, measure: object) -> None:
        if participant.name == "a" and task_index == 1:
            raise TaskError("quota", code="rate_limited")
        measure(ms=5)  # type: ignore[operator]

    config = _config(on_complete=seen.append)
    result = run_benchmark(config, task, ["--dry-run"], store=tmp_path / "s.sqlite3", write=str)
    statuses = [r.status for r in result.participants[0].records]
    assert statuses == ["success", "error", "success"]
    assert result.participants[0].records[1].error_code == "rate_limited"
    # Upstream's rule: a failed iteration is data, the run passes.
    assert result.passed
    assert len(seen) == 1
    outcome = seen[0]
    assert outcome.run_id == "no-ingest"  # type: ignore[attr-defined]
    assert outcome.store_run_id == result.store_run_id  # type: ignore[attr-defined]


def test_a_task_asking_for_a_pytest_fixture_says_so() -> None:
    def task(participant: Participant, tmp_path: Path) -> None:
        return None

    with pytest.raises(Exception, match="which only pytest provides"):
        run_benchmark(_config(), task, ["--dry-run"], store=None)


def test_async_tasks_and_the_whole_context_parameter() -> None:
    async def task(ctx: object) -> None:
        ctx.measure(ms=ctx.task_index + 1)  # type: ignore[attr-defined]

    result = run_benchmark(
        _config(concurrency=2, group_by="round"), task, ["--dry-run"], store=None, write=str
    )
    assert [[r.data["ms"] for r in p.records] for p in result.participants] == [[1, 2, 3]] * 2


def test_run_benchmark_worker_is_a_one_participant_benchmark() -> None:
    result = run_benchmark_worker(
        benchmark_slug="one",
        participant="solo",
        task=_task,
        iterations=2,
        no_ingest=True,
        store=None,
        write=str,
    )
    assert [(p.participant, len(p.records)) for p in result.participants] == [("solo", 2)]
    assert result.config.iterations == 2
    assert result.run_id == "no-ingest"


@pytest.mark.slow
def test_run_benchmark_reports_to_the_platform(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    lines: list[str] = []
    result = run_benchmark(
        _config(),
        _task,
        ["--run-key", "k-1"],
        base_url=loopback_platform.root_url,
        api_key=API_KEY,
        store=tmp_path / "s.sqlite3",
        write=lines.append,
    )
    assert result.passed, result.errors
    assert result.run_id.startswith("run_")
    assert result.dashboard_url
    assert f"All done. View at: {result.dashboard_url}" in lines
    (upsert,) = loopback_platform.calls("upsert_benchmark")
    assert upsert.method == "PUT"
    assert upsert.path.endswith("/benchmarks/prog")
    (create,) = loopback_platform.calls("create_run")
    body = create.json
    assert body["runKey"] == "k-1"
    assert body["config"]["iterations"] == 3
    records = loopback_platform.records(result.run_id)
    assert sorted((p, r["taskIndex"]) for p, r in records) == [
        (name, index) for name in ("a", "b") for index in range(3)
    ]
    (summary,) = loopback_platform.calls("summary")
    assert summary.path.endswith(f"/runs/{result.run_id}/summary")
    assert [r["provider"] for r in summary.json["results"]] == ["a", "b"]
    assert API_KEY not in "\n".join(lines)


# -- the command line ---------------------------------------------------------------------------

BENCH_FILE = """\
from pytest_benchsdk import Participant, define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="cli-demo",
    benchmark_name="CLI demo",
    participants=[Participant("fast"), Participant("keyed", required_env_vars=["KEYED_TOKEN"])],
    iterations=2,
    custom_cli_flags=["--region"],
)


@define_task
def task(participant, task_index, measure, bench):
    measure(ms=1 + task_index, region=bench.args.get("region", "none"))
"""


def _cli(tmp_path: Path, *args: str, entry: str = "main") -> subprocess.CompletedProcess[str]:
    """The CLI on ``bench_cli.py``: ``cli.main`` in this process (``entry="main"``), or a
    process of its own started as ``python -m pytest_benchsdk`` or the console script."""
    (tmp_path / "bench_cli.py").write_text(BENCH_FILE)
    env = {k: v for k, v in os.environ.items() if k != "KEYED_TOKEN"}
    if entry == "main":
        return cli(*args, cwd=tmp_path, env=env)
    if entry == "module":
        command = [sys.executable, "-m", "pytest_benchsdk", *args]
    else:
        command = [str(Path(sys.executable).parent / "pytest-benchsdk"), *args]
    return subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, check=False, env=env, timeout=120
    )


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["module", "script"])
def test_the_run_command_runs_a_bench_file(tmp_path: Path, entry: str) -> None:
    done = _cli(tmp_path, "run", "bench_cli.py", "--dry-run", "--region", "eu", entry=entry)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert "benchsdk: Dry run: no platform ingest or reporting." in out
    assert "benchsdk: CLI demo [bench_cli.py]" in out
    assert "  Skipping keyed: missing KEYED_TOKEN" in out
    assert "All done. No platform run created." in out
    store = tmp_path / ".benchmarks" / "benchsdk.sqlite3"
    assert f"Results stored in {store}" in out
    with ResultStore(store) as kept:
        (run,) = kept.list_runs()
        (records,) = kept.participant_records(run.run_id)
    assert [r.data["region"] for r in records.records] == ["eu", "eu"]


def test_the_run_command_without_available_participants_exits_0(tmp_path: Path) -> None:
    done = _cli(tmp_path, "run", "bench_cli.py", "--provider", "keyed", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Skipping keyed: missing KEYED_TOKEN",
        "No participants have their required env vars set \u2014 nothing to run (skipped: keyed).",
    ]
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--wat", "1"), "Benchmark failed: ValueError: Unknown flag(s): --wat"),
        (("--provider", "zz"), "Benchmark failed: UnknownParticipantError: Unknown participant(s)"),
        (("--base-url",), "Benchmark failed: ValueError: Usage:"),
    ],
)
def test_the_run_command_fails_with_status_1_as_upstream(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = _cli(tmp_path, "run", "bench_cli.py", "--dry-run", *args)
    assert done.returncode == 1
    assert done.stderr.startswith(message), done.stderr
    assert not (tmp_path / ".benchmarks").exists()


def test_the_run_command_names_a_file_without_exports(tmp_path: Path) -> None:
    (tmp_path / "bench_empty.py").write_text("x = 1\n")
    done = _cli(tmp_path, "run", "bench_empty.py")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "Benchmark failed: BenchSetupError: bench_empty.py must export a `config` created "
        "with define_benchmark_config (with participants)."
    )


@pytest.mark.slow
def test_the_run_command_reports_to_the_platform_with_upstreams_flags(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    done = _cli(
        tmp_path,
        "run",
        "bench_cli.py",
        f"--base-url={loopback_platform.root_url}",
        "--api-key",
        API_KEY,
        "--store",
        "here.sqlite3",
    )
    assert done.returncode == 0, done.stderr
    (create,) = loopback_platform.calls("create_run")
    assert create.path.endswith("/benchmarks/cli-demo/runs")
    assert create.json["config"]["participants"] == ["fast"]
    assert [(p, r["taskIndex"]) for p, r in loopback_platform.records()] == [
        ("fast", 0),
        ("fast", 1),
    ]
    assert any(line.startswith("All done. View at: ") for line in done.stdout.splitlines())
    assert API_KEY not in done.stdout + done.stderr
    assert (tmp_path / "here.sqlite3").exists()


INTERRUPTING_FILE = """\
import os, signal, time
from pytest_benchsdk import define_benchmark_config, define_task

config = define_benchmark_config(
    benchmark_slug="intr", benchmark_name="Interrupted", participants=["a"], iterations=5
)


@define_task
def task(task_index, measure):
    if task_index == 2:
        # A real Ctrl-C, sent when the third iteration runs (no timing involved).
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    measure(ms=task_index)
"""


@pytest.mark.slow
def test_ctrl_c_stores_what_ran_and_exits_130(tmp_path: Path) -> None:
    (tmp_path / "bench_intr.py").write_text(INTERRUPTING_FILE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_benchsdk", "run", "bench_intr.py", "--dry-run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        # A shell's background jobs ignore SIGINT, and an ignored signal stays ignored in the
        # children (Python then installs no KeyboardInterrupt handler): a CI started that way
        # ran this run to the end with status 0. Give the child the default disposition.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert done.returncode == 130, done.stdout + done.stderr
    assert "All done." not in done.stdout
    assert "status: interrupted (2 of 5 iterations ran)" in done.stdout
    assert done.stderr.strip() == "Interrupted: the records so far are in the results store."
    with ResultStore(tmp_path / ".benchmarks" / "benchsdk.sqlite3") as kept:
        (run,) = kept.list_runs()
        (records,) = kept.participant_records(run.run_id)
    assert run.status.startswith("interrupted")
    assert [r.task_index for r in records.records] == [0, 1]


def test_a_breached_threshold_fails_the_programmatic_run(tmp_path: Path) -> None:
    lines: list[str] = []
    config = _config(thresholds={"ms": "max < 11"})
    result = run_benchmark(config, _task, ["--dry-run"], store=None, write=lines.append)
    assert not result.passed
    assert result.summary is not None
    assert result.summary.status.state == "failed"
    assert "threshold" in result.summary.status.reasons


def test_the_run_command_prints_its_usage_on_help(tmp_path: Path) -> None:
    done = _cli(tmp_path, "run", "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("Usage:\n  pytest-benchsdk run <bench_file.py> [--shape name]")


def test_session_options_instead_of_argv_and_warm_up(tmp_path: Path) -> None:
    import json

    from pytest_benchsdk.runner import SessionOptions

    options = SessionOptions(
        dry_run=True,
        store_path=tmp_path / "s.sqlite3",
        json_path=tmp_path / "run.json",
        markdown_path=tmp_path / "summary.md",
    )
    lines: list[str] = []
    result = run_benchmark(_config(warmup=1), _task, options, write=lines.append)
    # Warm-up iterations run first and are never scored nor returned as the run's records.
    assert [len(p.records) for p in result.participants] == [3, 3]
    document = json.loads((tmp_path / "run.json").read_text())
    (benchmark,) = document["benchmarks"]
    assert benchmark["benchmarkSlug"] == "prog"
    warmup = {w["participant"]: [r["taskIndex"] for r in w["records"]] for w in benchmark["warmup"]}
    assert warmup == {"a": [-1], "b": [-1]}
    assert "| a | 3/3 |" in (tmp_path / "summary.md").read_text()
    assert f"Results written to {tmp_path / 'run.json'}" in lines
    assert f"Summary written to {tmp_path / 'summary.md'}" in lines
