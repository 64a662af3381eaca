"""A password in the platform URL (``http://user:pass@host/…``) is neither sent, stored nor
printed (issue 32, item 5): real sessions, resubmits and commands against the loopback
platform, reading the store's files byte by byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.e2e import E2E_BENCH, assert_delivered, use_platform
from helpers.platform_server import API_KEY, LoopbackPlatform
from helpers.sessions import store_path, stored_runs
from pytest_benchsdk import cli
from pytest_benchsdk._base.redact import redact_url, without_userinfo
from pytest_benchsdk.store import ResultStore

PASSWORD = "Hunter2-url-password"
DOWN = {"status": 503, "retry_after": "60", "times": None}


def _with_password(server: LoopbackPlatform, user: str = "ada") -> str:
    return server.root_url.replace("http://", f"http://{user}:{PASSWORD}@")


def _store_bytes(pytester: pytest.Pytester) -> bytes:
    """Every file of the store (database, WAL, journal) as bytes."""
    folder = store_path(pytester).parent
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def test_redact_url_and_without_userinfo() -> None:
    assert redact_url("http://u:p@h:1/a?b=c@d") == "http://***@h:1/a?b=c@d"
    assert redact_url(f"see https://u:{PASSWORD}@h/x and HTTP://me@h2") == (
        "see https://***@h/x and HTTP://***@h2"
    )
    # A password holding an unescaped "@" is replaced whole (urllib splits at the last "@").
    assert redact_url("http://u:p@ss@h/x") == "http://***@h/x"
    assert redact_url("mail ada@example.com, http://h/x@y") == "mail ada@example.com, http://h/x@y"
    assert without_userinfo("http://u:p@h:1/api/v1") == "http://h:1/api/v1"
    assert without_userinfo("https://h/x") == "https://h/x"


@pytest.mark.slow
def test_a_session_with_a_password_in_the_url_reports_and_keeps_it_nowhere(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess("--bench", "--bench-base-url", _with_password(server))
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 0, text
    # The bearer went out, not the URL's user and password as Basic auth in its place.
    api_calls = [c for c in server.calls() if c.raw_path.startswith("/api/v1/")]
    assert {c.headers.get("authorization") for c in api_calls} == {f"Bearer {API_KEY}"}
    assert_delivered(server, pytester)
    assert PASSWORD not in text
    assert PASSWORD.encode() not in _store_bytes(pytester)
    with ResultStore(store_path(pytester)) as store:
        (run,) = store.list_runs()
        assert store.outbox_target(run.run_id).url == server.api_url  # type: ignore[union-attr]


@pytest.mark.slow
def test_resubmit_messages_never_print_a_password(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe's case: a run reported to ``http://user:pass@…`` was named with its password
    by ``--bench-resubmit`` ("Run … was reported to http://user:pass@…"). Also a store written
    before (its platform URL stored with the password) prints none."""
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=E2E_BENCH)
    with (
        LoopbackPlatform(tokens=(API_KEY,)) as first,
        LoopbackPlatform(tokens=(API_KEY,)) as second,
    ):
        first.fault("*", **DOWN)
        session = pytester.runpytest_inprocess(
            "--bench", "--bench-base-url", _with_password(first), "--bench-upload-timeout", "1"
        )
        assert PASSWORD not in session.stdout.str() + session.stderr.str()
        assert PASSWORD.encode() not in _store_bytes(pytester)
        (run,) = stored_runs(store_path(pytester))
        resubmit = pytester.runpytest_inprocess(
            "--bench-resubmit", "--bench-base-url", _with_password(second, "bob")
        )
        text = resubmit.stdout.str()
        assert resubmit.ret == 1, text
        assert (
            f"Run {run.run_id} was reported to {first.api_url}, not {second.api_url}: not sent."
        ) in text
        assert PASSWORD not in text

        with ResultStore(store_path(pytester)) as store:  # as a store of an older version
            store.outbox_set_target(run.run_id, _with_password(first) + "/api/v1", None)
        resubmit = pytester.runpytest_inprocess(
            "--bench-resubmit", "--bench-base-url", _with_password(second, "bob")
        )
        text = resubmit.stdout.str()
        assert f"was reported to {first.api_url.replace('http://', 'http://***@')}, not" in text
        assert PASSWORD not in text


def test_platform_commands_never_print_a_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", API_KEY)
    with LoopbackPlatform(tokens=(API_KEY,)) as server:
        server.fault("list_benchmarks", status=500, body={"error": f"at {_with_password(server)}"})
        status = cli.main(["platform", "--base-url", _with_password(server), "benchmarks", "list"])
        captured = capsys.readouterr()
        assert status == 1
        assert "API error: Benchmark API request failed: 500" in captured.err
        assert PASSWORD not in captured.out + captured.err
        gone = server.root_url
    status = cli.main(["platform", "--base-url", gone.replace("//", f"//u:{PASSWORD}@"), "runs"])
    captured = capsys.readouterr()
    assert status == 1
    assert PASSWORD not in captured.out + captured.err


def test_a_usage_error_about_the_url_never_prints_its_password(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=E2E_BENCH)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-base-url", f"http://ada:{PASSWORD}@127.0.0.1:notaport"
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, text
    assert '--bench-base-url has an invalid port (got "http://***@127.0.0.1:notaport")' in text
    assert PASSWORD not in text
