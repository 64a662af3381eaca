"""What the platform answers is read within a cap, and an answer cut off on its way is asked
again (issue 32, items 2 and 8): against the loopback platform, which answers any size without
holding it (``huge``) and cuts 2xx answers off after N bytes (``cut_off``)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from helpers.e2e import E2E_BENCH, assert_delivered, bench_args, use_platform
from helpers.platform_server import API_KEY, LoopbackPlatform
from pytest_benchsdk.platform import BenchmarkApiError, BenchmarkClient, PlatformConnectionError
from pytest_benchsdk.platform._client import DEFAULT_MAX_ANSWER_BYTES, max_answer_bytes
from pytest_benchsdk.platform._errors import AnswerTooLargeError

MIB = 1024 * 1024


def _client(server: LoopbackPlatform, **options: Any) -> BenchmarkClient:
    return BenchmarkClient(base_url=server.api_url, api_key=API_KEY, timeout=10.0, **options)


# -- the cap ------------------------------------------------------------------------------------


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_an_answer_over_the_cap_is_refused(
    loopback_platform: LoopbackPlatform, declared: bool
) -> None:
    loopback_platform.fault("list_benchmarks", huge=64 * MIB, declare_length=declared)
    client = _client(loopback_platform, max_answer_bytes=MIB)
    with client, pytest.raises(AnswerTooLargeError) as caught:
        client.list_benchmarks()
    assert str(caught.value) == (
        "GET /benchmarks: the platform's answer (200) is larger than 1 MiB, the most this "
        "client reads (BENCHSDK_MAX_ANSWER_MB); it was not read. Raise BENCHSDK_MAX_ANSWER_MB "
        "if an answer this large is expected"
    )
    # It is a connection fault for every caller that already handles those (the CLI, checks).
    assert isinstance(caught.value, PlatformConnectionError)


def test_the_cap_is_set_in_mib_by_the_environment(loopback_platform: LoopbackPlatform) -> None:
    env = {"BENCHMARKS_PLATFORM_API_KEY": API_KEY, "BENCHSDK_MAX_ANSWER_MB": "0.5"}
    with BenchmarkClient(base_url=loopback_platform.api_url, env=env, timeout=10.0) as client:
        assert client.max_answer_bytes == MIB // 2
        loopback_platform.fault("get_benchmark", huge=MIB // 2 - 1)
        assert client.get_benchmark("x") is None  # {"x": "aaa…"}: read whole, no benchmark
        loopback_platform.fault("get_benchmark", huge=MIB // 2 + 1)
        with pytest.raises(AnswerTooLargeError, match=r"larger than 0\.5 MiB"):
            client.get_benchmark("x")
    for value in ("", "  ", "many", "-3", "0", "nan", "inf"):
        assert max_answer_bytes({"BENCHSDK_MAX_ANSWER_MB": value}) == DEFAULT_MAX_ANSWER_BYTES
    assert DEFAULT_MAX_ANSWER_BYTES == 8 * MIB
    assert max_answer_bytes({"BENCHSDK_MAX_ANSWER_MB": "64"}) == 64 * MIB


def test_every_answer_the_client_reads_is_capped(loopback_platform: LoopbackPlatform) -> None:
    """Errors, account calls and downloads too: none of them reads past the cap."""
    server = loopback_platform
    with _client(server, max_answer_bytes=MIB) as client:
        server.fault("me", huge=4 * MIB, declare_length=False)
        with pytest.raises(AnswerTooLargeError, match=r"^GET /me: "):
            client.get_me()
        server.fault("create_run", huge=4 * MIB, status=500, declare_length=False)
        with pytest.raises(AnswerTooLargeError, match=r"answer \(500\) is larger"):
            client.create_run("x", {})
        server.fault("download", huge=4 * MIB, declare_length=False)
        with pytest.raises(AnswerTooLargeError, match=r"^GET <download url>: "):
            client.download_artifact(server.root_url + "/_download/nothing")


# -- answers cut off on their way -----------------------------------------------------------------


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_a_cut_off_2xx_answer_is_a_connection_fault_not_a_rejection(
    loopback_platform: LoopbackPlatform, declared: bool
) -> None:
    loopback_platform.fault("upsert_benchmark", cut_off=12, declare_length=declared)
    client = _client(loopback_platform)
    with client, pytest.raises(PlatformConnectionError) as caught:
        client.upsert_benchmark("demo", {"name": "Demo"})
    assert not isinstance(caught.value, BenchmarkApiError)
    assert str(caught.value).startswith("PUT /benchmarks/demo: ")
    assert "cut off" in str(caught.value)
    # The platform did act: only its answer was lost on the way.
    assert "demo" in loopback_platform.benchmarks


@pytest.mark.slow
@pytest.mark.parametrize("route", ["create_run", "upsert_participant", "events"])
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_a_session_asks_again_after_a_cut_off_answer(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    route: str,
    declared: bool,
) -> None:
    use_platform(monkeypatch)
    loopback_platform.fault(route, cut_off=5, declare_length=declared)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(loopback_platform))
    text = result.stdout.str()
    assert result.ret == 0, text
    assert "Platform rejected" not in text
    assert "resubmit" not in text
    assert_delivered(loopback_platform, pytester)
    assert len([c for c in loopback_platform.calls(route) if c.status == 200]) >= 2


# -- an oversized answer in a session, and what it costs in memory ----------------------------


@pytest.mark.slow
def test_an_oversized_answer_stops_delivery_in_one_line_and_a_resubmit_sends_the_run(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("create_run", huge=24 * MIB, declare_length=False, times=None)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    text = result.stdout.str()
    stops = [line for line in text.splitlines() if "Platform delivery stopped" in line]
    assert stops, text
    assert (
        "run: POST /benchmarks/demo/runs: the platform's answer (200) is larger than 8 MiB, "
        "the most this client reads (BENCHSDK_MAX_ANSWER_MB)"
    ) in stops[0]
    assert "Platform rejected" not in text
    # Asked once: the same question gets the same answer.
    assert len(server.calls("create_run")) == 1
    server.clear_faults()
    again = pytester.runpytest_inprocess("--bench-resubmit", "--bench-base-url", server.root_url)
    assert again.ret == 0, again.stdout.str()
    assert len(server.runs) == 1
    assert_delivered(server, pytester)


#: Runs a command in a child and prints its exit status and the child's peak RSS in KiB (the
#: grandchildren of this script are the command's own: RUSAGE_CHILDREN covers them after wait).
_PEAK_RSS = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(done.stdout + done.stderr)
"""


def _peak_rss(cwd: Path, env: dict[str, str], *command: str) -> tuple[int, float, str]:
    """``command``'s exit status, peak RSS in MiB, and output."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS, *command],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    head, _, output = done.stdout.partition("\n")
    status, kib = head.split()
    return int(status), int(kib) / 1024, output


@pytest.mark.slow
def test_a_256_mib_answer_leaves_memory_bounded(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform
) -> None:
    """The probe's case: the run creation (and ``platform benchmarks list``) answered 256 MiB
    drove a session to 680-1,074 MiB. Now the session and the command stay far below the
    answer's own size (the figures before and after: ``benchmarks/answer_cap_rss.py``)."""
    server = loopback_platform
    server.fault("create_run", huge=256 * MIB, declare_length=False, times=None)
    server.fault("list_benchmarks", huge=256 * MIB, declare_length=False, times=None)
    pytester.makepyfile(bench_x=E2E_BENCH)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(BENCHMARKS_PLATFORM_API_KEY=API_KEY, BENCHMARKS_PLATFORM_URL=server.root_url)
    status, session_mib, output = _peak_rss(
        pytester.path, env, sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
        *bench_args(server, "--bench-upload-timeout", "5"),
    )  # fmt: skip
    assert status == 0, output
    assert "is larger than 8 MiB" in output
    status, command_mib, output = _peak_rss(
        pytester.path, env, sys.executable, "-m", "pytest_benchsdk", "platform", "benchmarks",
        "list",
    )  # fmt: skip
    assert status == 1, output
    assert output.strip().startswith("GET /benchmarks: the platform's answer (200) is larger")
    # The bound is the answer's size: holding it at all takes 256 MiB (the old peaks: 680+).
    assert session_mib < 256, session_mib
    assert command_mib < 256, command_mib
    print(json.dumps({"session_peak_mib": session_mib, "command_peak_mib": command_mib}))


@pytest.mark.slow
def test_a_gzipped_artifact_is_inflated_within_the_cap(loopback_platform: LoopbackPlatform) -> None:
    """A few KiB of gzip can hold gigabytes: the download of a gzipped log stops inflating it
    at the cap. A log within the cap reads as before."""
    with _client(loopback_platform, max_answer_bytes=MIB) as client:
        client.upsert_benchmark("demo", {"name": "Demo"})
        created_run = client.create_run(
            "demo", {"totalTasks": 1, "workerCount": 1, "participants": ["p1"]}
        )
        run_id = str(created_run["run"]["id"])
        client.plan_workers("demo", run_id, "p1")
        claimed = client.claim_worker("demo", run_id, "p1", {"processKind": "process"})
        assert claimed is not None
        worker, attempt = str(claimed["workerId"]), str(claimed["attemptId"])
        ids = []
        for body in (b"line\n" * 1000, b"\n" * (64 * MIB)):
            created = client.upload_artifact(
                "demo", run_id, worker, attempt_id=attempt, kind="coordinator.log",
                body=gzip.compress(body), content_type="application/gzip", name="worker.log",
            )  # fmt: skip
            ids.append(str(created.get("artifactId") or created["artifact"]["id"]))
        assert client.download_worker_artifact("demo", run_id, worker, ids[0]) == "line\n" * 1000
        inflates = r"^GET <download url>: the artifact inflates"
        with pytest.raises(AnswerTooLargeError, match=inflates):
            client.download_worker_artifact("demo", run_id, worker, ids[1])


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_a_compressed_answer_is_inflated_within_the_cap(
    loopback_platform: LoopbackPlatform, encoding: str
) -> None:
    """64 KiB of gzip can inflate to 64 MiB: httpx inflates each network read whole, the
    client inflates no more than the cap allows. The memory the refusal took is measured
    (tracemalloc: every bytes object the inflating allocates)."""
    with _client(loopback_platform, max_answer_bytes=MIB) as client:
        loopback_platform.fault("get_benchmark", huge=MIB - 1, encoding=encoding)
        assert client.get_benchmark("x") is None  # read whole: {"x": "aaa…"}
        loopback_platform.fault("get_benchmark", huge=256 * MIB, encoding=encoding)
        tracemalloc.start()
        try:
            with pytest.raises(AnswerTooLargeError, match=r"larger than 1 MiB"):
                client.get_benchmark("x")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 8 * MIB, peak / MIB
