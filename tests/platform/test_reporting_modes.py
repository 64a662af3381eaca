"""End-to-end: secrets never leak; dry run and local-only modes; ``--bench-check``'s probe."""

from __future__ import annotations

import pytest

from helpers.e2e import (
    E2E_BENCH,
    assert_delivered,
    bench_args,
    outcome_file,
    use_platform,
)
from helpers.platform_server import API_KEY, LoopbackPlatform
from helpers.sessions import bench, read_json, store_path, stored_runs
from pytest_benchsdk import ResultStore

TOKEN = "oauth_SECRET_TOKEN_fedcba9876543210"
LOCAL_ONLY = (
    "benchsdk: Local only: no platform credentials found (set BENCHMARKS_PLATFORM_API_KEY or "
    "BENCHMARKS_PLATFORM_TOKEN, or pass --bench-api-key, to report runs)."
)
DRY_RUN = "benchsdk: Dry run: no platform ingest or reporting."


# -- secrets ---------------------------------------------------------------------------------


def _everything_written(pytester: pytest.Pytester, result: pytest.RunResult) -> dict[str, bytes]:
    """Every file the session left under its directory, plus its output."""
    found = {
        str(p.relative_to(pytester.path)): p.read_bytes()
        for p in pytester.path.rglob("*")
        if p.is_file()
    }
    found["<stdout>"] = result.stdout.str().encode()
    found["<stderr>"] = result.stderr.str().encode()
    return found


@pytest.mark.slow
@pytest.mark.parametrize("how", ["api-key-env", "token-env", "api-key-option"])
def test_credentials_never_appear_in_output_logs_artifacts_store_json_or_junitxml(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    server = loopback_platform
    secret = TOKEN if how == "token-env" else API_KEY
    extra: tuple[str, ...] = ()
    if how == "api-key-env":
        monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", API_KEY)
    elif how == "token-env":
        monkeypatch.setenv("BENCHMARKS_PLATFORM_TOKEN", TOKEN)
        server.tokens = {TOKEN}
    else:
        extra = ("--bench-api-key", API_KEY)
    # Platform answers that echo the credential: a transient failure (retried, shown nowhere
    # unless it lasts) and a permanent rejection (shown in the output).
    server.fault("events", status=503, times=1, body={"error": f"overloaded for {secret}"})
    server.fault("summary", status=422, times=None, body={"error": f"bad summary from {secret}"})
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(
        *bench_args(server, *extra),
        "-v",
        "-rA",
        "--bench-json",
        "run.json",
        "--junitxml",
        "junit.xml",
        "--log-file",
        "session.log",
        "--log-file-level",
        "DEBUG",
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*Platform rejected: summary: *bad summary from [*][*][*]"])
    assert assert_delivered(server, pytester, summary=False)
    written = _everything_written(pytester, result)
    assert {"junit.xml", "run.json", "session.log", ".benchmarks/benchsdk.sqlite3"} <= set(written)
    assert [name for name, data in written.items() if secret.encode() in data] == []
    # On the wire: only ever in the Authorization header, never in a body or a URL; presigned
    # uploads carry no Authorization at all.
    for request in server.calls():
        assert secret.encode() not in request.body
        assert secret not in request.raw_path
        if request.route == "upload":
            assert "authorization" not in request.headers
        else:
            assert request.headers["authorization"] == f"Bearer {secret}"
    for artifact in server.uploaded_artifacts():
        assert secret.encode() not in artifact["content"]


@pytest.mark.slow
def test_credentials_never_appear_when_the_platform_is_down(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    server.fault("*", status=503, retry_after="60", times=None, body={"error": f"down, {API_KEY}"})
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(
        *bench_args(server), "--bench-json", "run.json", "--junitxml", "junit.xml"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["  Platform not reachable yet (*503 Service Unavailable — down, [*][*][*]);*"]
    )
    # The platform's error text (with the key) is kept in the store's outbox, redacted.
    with ResultStore(store_path(pytester)) as store:
        errors = [e.last_error for e in store.outbox_pending()]
    assert (
        "benchmark: PUT /benchmarks/demo: Benchmark API request failed: 503 Service Unavailable"
        " — down, ***"
    ) in errors
    written = _everything_written(pytester, result)
    assert [name for name, data in written.items() if API_KEY.encode() in data] == []


# -- dry run and local only ------------------------------------------------------------------


@pytest.mark.parametrize("how", ["option", "env", "option-with-credentials"])
def test_dry_run_needs_no_credentials_and_sends_nothing(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    server = loopback_platform
    args = bench_args(server)
    if how == "env":
        monkeypatch.setenv("BENCHSDK_NO_INGEST", "1")
    else:
        args += ("--bench-dry-run",)
    if how == "option-with-credentials":
        use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH, bench_y=bench(slug="other", name="Other"))
    result = pytester.runpytest_inprocess(*args, "--bench-json", "run.json")
    result.assert_outcomes(passed=8)
    assert result.ret == 0
    assert result.stdout.lines.count(DRY_RUN) == 1
    assert "Local only" not in result.stdout.str()
    assert server.calls() == []
    assert outcome_file(pytester) == {"run_id": "no-ingest", "dashboard_url": ""}
    document = read_json(pytester.path / "run.json")
    assert document["dryRun"] is True
    assert {(b["runId"], b["dashboardUrl"]) for b in document["benchmarks"]} == {(None, None)}


def test_without_credentials_the_run_is_local_only_and_says_so_once(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform
) -> None:
    server = loopback_platform
    pytester.makepyfile(bench_x=E2E_BENCH, bench_y=bench(slug="other", name="Other"))
    result = pytester.runpytest_inprocess(*bench_args(server), "--bench-json", "run.json")
    result.assert_outcomes(passed=8)
    assert result.ret == 0
    assert result.stdout.lines.count(LOCAL_ONLY) == 1
    text = result.stdout.str()
    assert "Dry run" not in text
    assert "not delivered" not in text
    assert "resubmit" not in text
    assert server.calls() == []
    runs = stored_runs(store_path(pytester))
    assert [(r.record_count, r.platform_run_id, r.dry_run) for r in runs] == [(4, None, False)] * 2
    assert outcome_file(pytester) == {"run_id": "no-ingest", "dashboard_url": ""}
    document = read_json(pytester.path / "run.json")
    assert document["dryRun"] is False
    assert {(b["runId"], b["dashboardUrl"]) for b in document["benchmarks"]} == {(None, None)}


def test_local_only_with_strict_upload_still_passes(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform
) -> None:
    """Nothing was queued for the platform, so nothing is undelivered."""
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(loopback_platform, "--bench-strict-upload"))
    assert result.ret == 0
    assert result.stdout.lines.count(LOCAL_ONLY) == 1


# -- --bench-check ---------------------------------------------------------------------------


def _check(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(bench_x=E2E_BENCH)
    return pytester.runpytest_inprocess("--bench", "--bench-check", *args)


def test_check_probes_connectivity_and_auth(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    result = _check(pytester, "--bench-base-url", server.root_url)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(['  "apiOk": true,', '  "envOk": true,'])
    assert [(r.method, r.route) for r in server.calls()] == [("GET", "list_benchmarks")]
    assert server.calls()[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert server.runs == {}
    assert not store_path(pytester).exists()


def test_check_with_a_refused_key_fails_without_showing_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    with LoopbackPlatform(tokens=("the-right-key",)) as server:
        result = _check(pytester, "--bench-base-url", server.root_url)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "[[]benchsdk[]] API connectivity check failed: *401*",
            '  "apiOk": false,',
            '  "envOk": true,',
            "Benchmark check failed. See warnings above for details.",
        ]
    )
    assert API_KEY not in result.stdout.str() + result.stderr.str()


def test_check_with_the_platform_unreachable_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch)
    server = LoopbackPlatform()
    root = server.root_url
    server.stop()  # never started: the port is closed again
    result = _check(pytester, "--bench-base-url", root)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["[[]benchsdk[]] API connectivity check failed: *", '  "apiOk": false,', '  "envOk": true,']
    )


def test_check_without_credentials_fails_env(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform
) -> None:
    result = _check(pytester, "--bench-base-url", loopback_platform.root_url)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "[[]benchsdk[]] BENCHMARKS_PLATFORM_API_KEY or BENCHMARKS_PLATFORM_TOKEN is not set",
            '  "apiOk": false,',
            '  "envOk": false,',
        ]
    )
    assert loopback_platform.calls() == []


def test_check_in_dry_run_needs_no_credentials_and_no_platform(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform
) -> None:
    result = _check(pytester, "--bench-dry-run", "--bench-base-url", loopback_platform.root_url)
    assert result.ret == 0
    result.stdout.fnmatch_lines(['  "apiOk": null,', '  "envOk": true,'])
    assert loopback_platform.calls() == []
