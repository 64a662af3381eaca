"""A platform that answers a byte at a time, answers 2xx of the wrong shape, or refuses the
connection (issue 48, items 1, 2 and 6; item 9: the credentials folder's mode).

Against the loopback platform with its ``trickle`` (slow-loris) and ``malformed`` faults, and a
port nothing listens on. The commands whose failure was a hang run in real subprocesses with a
generous outer timeout, so a regression fails the test instead of hanging the suite; no test
bounds the time more tightly than "within its deadline plus a generous margin".
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.e2e import E2E_BENCH
from helpers.platform_server import API_KEY, LoopbackPlatform
from helpers.sessions import store_path, stored_runs
from pytest_benchsdk import cli
from pytest_benchsdk.platform import BenchmarkClient, PlatformConnectionError
from pytest_benchsdk.platform._client import REQUEST_TIMEOUT_ENV, request_timeout
from pytest_benchsdk.platform._errors import (
    DeadlineError,
    MalformedAnswerError,
    PlatformUnreachableError,
)
from pytest_benchsdk.store import ResultStore

#: How long any process of these tests may take before it counts as hung.
HUNG_S = 150
#: The platform is "down" for a session: every request answered 503, come back in a minute.
DOWN: dict[str, Any] = {"status": 503, "retry_after": "60", "times": None}


def _closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "COV_", "BENCHMARKS_PLATFORM", "BENCHSDK_"))
    }
    env["BENCHMARKS_PLATFORM_API_KEY"] = API_KEY
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def _process(
    cwd: Path, *argv: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python ARGV`` in ``cwd``: what it gave and how long it took (a hang fails here)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=HUNG_S,
        check=False,
    )
    return done, time.monotonic() - started


def _pytest(cwd: Path, *args: str, **extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    return _process(cwd, "-m", "pytest", "-p", "no:cacheprovider", *args, env=_env(**extra))


# -- 1. slow-loris answers -------------------------------------------------------------------


def test_a_request_ends_at_its_deadline_when_the_answer_comes_a_byte_at_a_time(
    loopback_platform: LoopbackPlatform,
) -> None:
    loopback_platform.fault("list_benchmarks", trickle=0.05, times=None)
    with BenchmarkClient(base_url=loopback_platform.api_url, api_key=API_KEY, timeout=1.0) as c:
        assert c.deadline_s == 1.0
        with pytest.raises(DeadlineError) as caught:
            c.list_benchmarks()
    assert str(caught.value) == (
        "GET /benchmarks: no complete answer within 1 s (the request's deadline, "
        f"BENCHSDK_PLATFORM_TIMEOUT): the platform at {loopback_platform.root_url} answers "
        "too slowly or not at all"
    )
    assert caught.value.timeout  # transient: a delivery asks again later


def test_a_slow_answer_that_completes_within_the_deadline_is_read(
    loopback_platform: LoopbackPlatform,
) -> None:
    loopback_platform.fault("list_benchmarks", trickle=0.02, trickle_for=0.3)
    with BenchmarkClient(base_url=loopback_platform.api_url, api_key=API_KEY, timeout=20) as c:
        assert c.list_benchmarks() == []


def test_the_request_deadline_is_set_by_the_environment() -> None:
    assert request_timeout({}).read == 30.0
    assert request_timeout({REQUEST_TIMEOUT_ENV: "90"}).read == 90.0
    assert request_timeout({REQUEST_TIMEOUT_ENV: "90"}).connect == 10.0
    assert request_timeout({REQUEST_TIMEOUT_ENV: "2"}).connect == 2.0
    for value in ("", "x", "0", "-1", "inf", "nan"):
        assert request_timeout({REQUEST_TIMEOUT_ENV: value}).read == 30.0, value


def test_platform_benchmarks_list_ends_at_its_deadline_under_a_slow_loris_answer(
    loopback_platform: LoopbackPlatform, tmp_path: Path
) -> None:
    """The probe's case: the command had not returned after 150 s."""
    loopback_platform.fault("list_benchmarks", trickle=0.2, times=None)
    env = _env(HOME=str(tmp_path), **{REQUEST_TIMEOUT_ENV: "3"})
    argv = ("--base-url", loopback_platform.root_url, "benchmarks", "list")
    done, took = _process(tmp_path, "-m", "pytest_benchsdk", "platform", *argv, env=env)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        "GET /benchmarks: no complete answer within 3 s (the request's deadline, "
        f"BENCHSDK_PLATFORM_TIMEOUT): the platform at {loopback_platform.root_url} answers "
        "too slowly or not at all\n"
    )
    assert took < 3 + 60


@pytest.mark.slow
def test_a_resubmit_ends_at_its_deadline_under_a_slow_loris_answer_and_keeps_the_outbox(
    loopback_platform: LoopbackPlatform, pytester: pytest.Pytester
) -> None:
    """The probe's case: ``--bench-resubmit`` had not ended after 300 s. At its deadline the
    request in flight is abandoned, what is unsent stays queued and is said in records; the
    next resubmit, against a platform that answers, delivers everything once."""
    server = loopback_platform
    pytester.makepyfile(bench_x=E2E_BENCH)
    server.fault("*", **DOWN)
    session, _ = _pytest(
        pytester.path, "--bench", "--bench-base-url", server.root_url, "--bench-upload-timeout", "1"
    )
    assert session.returncode == 0, session.stdout + session.stderr
    server.clear_faults()
    server.fault("*", trickle=0.2, times=None)
    args = ("--bench-resubmit", "--bench-base-url", server.root_url)
    slow, took = _pytest(pytester.path, *args, "--bench-resubmit-timeout", "3")
    text = slow.stdout
    assert slow.returncode == 1, text + slow.stderr
    assert "INTERNALERROR" not in text + slow.stderr
    assert (
        "benchsdk: Platform delivery stopped: the delivery deadline (3 s, "
        "--bench-resubmit-timeout) passed with a request in flight; it was abandoned and what "
        "is unsent stays queued"
    ) in text
    assert "benchsdk: Not delivered to the platform: 4 record(s) of 1 run (" in text
    assert took < 3 + 60
    assert server.records() == []

    server.clear_faults()
    again, _ = _pytest(pytester.path, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    records = sorted((p, r["taskIndex"]) for p, r in server.records())
    assert records == [("p1", 0), ("p1", 1), ("p2", 0), ("p2", 1)]  # each once


# -- 2. a malformed success ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "answer", "call", "expected"),
    [
        ("create_run", [1, 2], "create_run", "the platform's answer is a JSON list where a JSON"),
        ("create_run", {"run": {}}, "create_run", 'its "run.id" is null where a non-empty id'),
        ("create_run", {"run": "r1"}, "create_run", 'its "run" is a JSON string where a JSON'),
        ("list_benchmarks", {"items": "x"}, "list_benchmarks", 'its "items" is a JSON string'),
        ("get_benchmark", {"benchmark": 3}, "get_benchmark", 'its "benchmark" is a JSON number'),
        ("claim", {"assignment": {"workerId": "w"}}, "claim", '"assignment.attemptId" is null'),
        ("progress", [], "get_progress", "the platform's answer is a JSON list"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_malformed_answer(
    loopback_platform: LoopbackPlatform, route: str, answer: Any, call: str, expected: str
) -> None:
    server = loopback_platform
    with BenchmarkClient(base_url=server.api_url, api_key=API_KEY, timeout=10) as client:
        client.upsert_benchmark("b", {"name": "B"})
        run = client.create_run("b", {"name": "x"})["run"]["id"]
        client.upsert_participant("b", run, "p1")
        client.plan_workers("b", run, "p1", {"workerCount": 1, "totalTasks": 1})
        server.fault(route, malformed=answer)
        calls = {
            "create_run": lambda: client.create_run("b", {"name": "y"}),
            "list_benchmarks": client.list_benchmarks,
            "get_benchmark": lambda: client.get_benchmark("b"),
            "claim": lambda: client.claim_worker("b", run, "p1", {}),
            "get_progress": lambda: client.get_progress("b", run),
        }
        with pytest.raises(MalformedAnswerError) as caught:
            calls[call]()
    assert "malformed answer: " in str(caught.value)
    assert expected in str(caught.value)
    assert isinstance(caught.value, PlatformConnectionError)  # the CLI and checks handle it


@pytest.mark.slow
def test_a_malformed_run_creation_is_reported_and_the_resubmit_delivers_once_it_is_gone(
    loopback_platform: LoopbackPlatform, pytester: pytest.Pytester
) -> None:
    """The probe's case: run creation answered 200 with a JSON list. The resubmit ended in
    INTERNALERROR (3), and 0 of 4 records reached the platform after the fault was gone."""
    server = loopback_platform
    pytester.makepyfile(bench_x=E2E_BENCH)
    server.fault("create_run", malformed=[{"id": "run_x"}], times=None)
    session, _ = _pytest(pytester.path, "--bench", "--bench-base-url", server.root_url)
    text = session.stdout
    assert session.returncode == 0, text + session.stderr
    assert (
        "benchsdk: Platform delivery stopped: run: POST /benchmarks/demo/runs: malformed "
        "answer: the platform's answer is a JSON list where a JSON object is expected; "
        "nothing was taken from it; the uploads stay queued, send them with pytest "
        "--bench-resubmit"
    ) in text
    assert "internal error" not in text
    assert "Not delivered to the platform: 4 record(s) of 1 run (" in text

    args = ("--bench-resubmit", "--bench-base-url", server.root_url)
    still, _ = _pytest(pytester.path, *args)
    assert still.returncode == 1, still.stdout + still.stderr
    assert "INTERNALERROR" not in still.stdout + still.stderr
    assert "malformed answer" in still.stdout
    assert "benchsdk: still unsent: 4 record(s) of 1 run (" in still.stdout
    (run,) = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        assert store.outbox_entries(run.run_id, "rejected") == []  # queued, not rejected

    server.clear_faults()
    fixed, _ = _pytest(pytester.path, *args)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    records = sorted((p, r["taskIndex"]) for p, r in server.records())
    assert records == [("p1", 0), ("p1", 1), ("p2", 0), ("p2", 1)]


# -- 6. a refused connection -----------------------------------------------------------------


def test_a_refused_connection_is_unreachable_in_the_one_wording() -> None:
    port = _closed_port()
    with (
        BenchmarkClient(base_url=f"http://127.0.0.1:{port}/api/v1", api_key=API_KEY) as c,
        pytest.raises(PlatformUnreachableError) as caught,
    ):
        c.list_benchmarks()
    assert str(caught.value).startswith(
        f"Cannot reach http://127.0.0.1:{port} (GET /benchmarks): [Errno 111] Connection "
        "refused; check the platform URL"
    )


def test_a_session_against_a_refused_connection_stops_delivery_at_once(
    pytester: pytest.Pytester,
) -> None:
    """The probe's case: a 6-iteration session took 32.7 s instead of ~1 s (retrying until
    the upload timeout) and said "23 platform upload(s) not delivered"."""
    pytester.makepyfile(bench_x=E2E_BENCH.replace("iterations=2", "iterations=3"))
    root = f"http://127.0.0.1:{_closed_port()}"
    done, took = _pytest(
        pytester.path, "--bench", "--bench-base-url", root, "--bench-upload-timeout", "120"
    )
    text = done.stdout
    assert done.returncode == 0, text + done.stderr
    assert (
        f"benchsdk: Platform delivery stopped: benchmark: Cannot reach {root} (PUT "
        "/benchmarks/demo): [Errno 111] Connection refused; check the platform URL"
    ) in text
    assert (
        "Platform delivery stopped (see above); results are kept locally. Send them later "
        "with: pytest --bench-resubmit"
    ) in text
    assert "Not delivered to the platform: 6 record(s) of 1 run (" in text
    assert "platform upload(s) not delivered" not in text
    # One attempt, no retry storm; everything stays queued.
    (run,) = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        (benchmark,) = [e for e in store.outbox_entries(run.run_id) if e.kind == "benchmark"]
        assert benchmark.attempts == 1
        assert store.outbox_entries(run.run_id, "sent") == []
        assert store.outbox_entries(run.run_id, "rejected") == []
    assert took < 60  # it waited for nothing; with retries it took the 120 s upload timeout


def test_platform_commands_say_cannot_reach_with_the_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", API_KEY)
    for root, reason in (
        ("http://nonexistent.invalid", "[Errno -2] Name or service not known"),
        (f"http://127.0.0.1:{_closed_port()}", "[Errno 111] Connection refused"),
    ):
        status = cli.main(["platform", "--base-url", root, "benchmarks", "list"])
        out, err = capsys.readouterr()
        assert (status, out) == (1, "")
        if "nonexistent" in root and "Name or service not known" not in err:
            pytest.skip(f"this resolver says it differently: {err}")
        assert err == (
            f"Cannot reach {root} (GET /benchmarks): {reason}; check the platform URL "
            "(--base-url / --bench-base-url, BENCHMARKS_PLATFORM_URL) and that this machine "
            "can reach it\n"
        )


# -- 9. the credentials folder ---------------------------------------------------------------


def test_device_login_over_an_existing_open_folder_makes_it_private(
    loopback_platform: LoopbackPlatform,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("BENCHMARKS_PLATFORM_API_KEY", "BENCHMARKS_PLATFORM_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / ".benchsdk"
    folder.mkdir()
    folder.chmod(0o755)
    loopback_platform.tokens.clear()
    loopback_platform.device_flow(interval=0, approve_after=1)
    status = cli.main(["platform", "auth", "login", "--base-url", loopback_platform.root_url])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "Authenticated." in out
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "credentials.json").stat().st_mode) == 0o600
