"""Secrets never reach any output: a participant's secret in every escaped form (JSON with and
without ensure_ascii, repr), and the platform credentials themselves, in the terminal,
junitxml, the store, --bench-json, the exports, the HTML report and everything the loopback
platform received."""

from __future__ import annotations

import json
import logging
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

import pytest

from helpers.e2e import bench_args, use_platform
from helpers.platform_server import API_KEY, LoopbackPlatform
from helpers.sessions import bench, store_path, stored_runs
from pytest_benchsdk._base.redact import LogRedaction, Redactor, credential_secrets
from pytest_benchsdk.cli import main

#: A participant secret that JSON and repr write differently: a quote, a backslash and a
#: non-ASCII letter.
AWKWARD = 'sk-"q\\b-é-0123456789'


def forms(secret: str) -> set[str]:
    """The secret as it is and as JSON (either way) or repr write it, once or twice."""
    once = {
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1],
        repr(secret)[1:-1],
    }
    twice = {json.dumps(f)[1:-1] for f in once} | {repr(f)[1:-1] for f in once}
    return {secret} | once | twice


def assert_absent(secret: str, texts: Iterable[str], where: str) -> None:
    for text in texts:
        for form in forms(secret):
            assert form not in text, f"{form!r} in {where}"


def xml_strings(path: Path) -> list[str]:
    """Every text and attribute value of an XML file, entities decoded."""
    out: list[str] = [path.read_text()]
    for element in ET.parse(path).iter():
        out.extend(v for v in (element.text, element.tail) if v)
        out.extend(element.attrib.values())
    return out


def store_texts(path: Path) -> list[str]:
    return [file.read_bytes().decode("utf-8", "replace") for file in path.parent.iterdir()]


def platform_texts(server: LoopbackPlatform) -> list[str]:
    """What the platform received: every request body and uploaded artifact (the
    Authorization header carries the key by design)."""
    texts = [r.body.decode("utf-8", "replace") for r in server.requests]
    texts += [a["content"].decode("utf-8", "replace") for a in server.uploaded_artifacts()]
    return texts


# -- 6: escaped forms --------------------------------------------------------------------------

AWKWARD_BENCH = bench(
    'participants=[Participant("p", required_env_vars=["PSECRET"], '
    'token=os.environ["PSECRET"])], iterations=2',
    """
    @define_task
    def task(participant, task_index, measure, log):
        token = participant.token
        log("calling", {"auth": token, "nested": {"again": json.dumps({"k": token})}})
        measure(value=task_index, auth={"t": token}, text=repr(token))
        if task_index == 1:
            raise TaskError("refused", code="auth", data={"key": token})
    """,
    prelude="import json, os\n",
)


def test_a_secret_with_quotes_backslashes_and_accents_is_redacted_in_every_form(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    monkeypatch.setenv("PSECRET", AWKWARD)
    pytester.makepyfile(bench_x=AWKWARD_BENCH)
    out, junit = pytester.path / "run.json", pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess(
        *bench_args(server, "--bench-json", str(out), f"--junitxml={junit}"),
        "-l", "-rA", "-vv",
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    terminal = result.stdout.str() + result.stderr.str()
    # The TaskError's data line, redacted after it was serialised.
    assert 'data: {"key":"***"}' in terminal
    assert_absent(AWKWARD, [terminal], "the terminal")
    assert_absent(AWKWARD, xml_strings(junit), "junitxml")
    assert_absent(AWKWARD, [out.read_text()], "--bench-json")
    assert_absent(AWKWARD, store_texts(store_path(pytester)), "the store")
    assert_absent(AWKWARD, platform_texts(server), "the platform")
    logs = [a for a in server.uploaded_artifacts() if a["kind"] == "coordinator.log"]
    assert logs
    assert '{"auth":"***"' in logs[0]["content"].decode()


# -- 7: the platform credentials -------------------------------------------------------------

LEAKY_BENCH = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=2',
    """
    @define_task
    def task(participant, task_index, measure, log):
        key = os.environ["BENCHMARKS_PLATFORM_API_KEY"]
        print("using", key)
        log(f"key {key}", {"key": key})
        measure(value=task_index, key=key)
        if task_index == 1:
            raise TaskError(f"denied for {key}", code="auth", data={"key": key})
    """,
    prelude="import os\n",
)


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "xdist"])
def test_the_platform_api_key_never_reaches_any_output(
    pytester: pytest.Pytester,
    loopback_platform: LoopbackPlatform,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    xdist: bool,
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=LEAKY_BENCH)
    out, junit, html = (pytester.path / n for n in ("run.json", "junit.xml", "report.html"))
    args = [*bench_args(server, "--bench-json", str(out), f"--junitxml={junit}")]
    args += ["--bench-html", str(html), "-l", "-rA", "-vv", "-p", "no:cacheprovider"]
    if xdist:
        pytest.importorskip("xdist")
        args += ["-n", "2", "--dist", "loadgroup"]
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=2, failed=2)
    terminal = result.stdout.str() + result.stderr.str()
    assert "denied for ***" in terminal
    assert_absent(API_KEY, [terminal], "the terminal")
    assert_absent(API_KEY, xml_strings(junit), "junitxml")
    assert_absent(API_KEY, [out.read_text()], "--bench-json")
    assert_absent(API_KEY, [html.read_text()], "the HTML report")
    path = store_path(pytester)
    assert_absent(API_KEY, store_texts(path), "the store")
    assert_absent(API_KEY, platform_texts(server), "the platform")
    assert server.records()  # the records did reach it
    (run,) = stored_runs(path)
    capsys.readouterr()
    for fmt in ("json", "csv"):
        assert main(["--store", str(path), "export", run.run_id, "--format", fmt]) == 0
        exported = capsys.readouterr().out
        assert "***" in exported
        assert_absent(API_KEY, [exported], f"export --format {fmt}")


def test_credential_secrets_are_read_without_resolving_them(tmp_path: Path) -> None:
    """The option's key, both environment variables and the saved login's secrets (no
    request, no refresh)."""
    (tmp_path / ".benchsdk").mkdir()
    (tmp_path / ".benchsdk" / "credentials.json").write_text(
        json.dumps({"token": "saved-token-1", "refreshToken": "saved-refresh-1", "kind": "x"})
    )
    env = {"BENCHMARKS_PLATFORM_TOKEN": "env-token-1", "BENCHMARKS_PLATFORM_API_KEY": "env-key-1"}
    found = credential_secrets(env, api_key="option-key-1", home=tmp_path)
    assert sorted(found) == sorted(
        ["option-key-1", "env-token-1", "env-key-1", "saved-token-1", "saved-refresh-1"]
    )
    redactor = Redactor(found)
    assert redactor.text("a saved-refresh-1 b env-key-1") == "a *** b ***"
    assert "saved" not in repr(redactor)
    assert credential_secrets({}, home=tmp_path / "nowhere") == []


def test_a_redactor_replaces_every_form_and_keeps_short_values() -> None:
    redactor = Redactor([AWKWARD, "short", None])
    assert redactor.secrets == (AWKWARD,)
    for form in forms(AWKWARD):
        assert redactor.text(f"<{form}>") == "<***>"
    value = {"k": [AWKWARD, {AWKWARD: json.dumps(AWKWARD)}], "n": 1}
    assert redactor.value(value) == {"k": ["***", {"***": '"***"'}], "n": 1}
    clean = {"k": "nothing here"}
    assert redactor.value(clean) is clean
    assert redactor.union(["another-secret"]).covers(redactor)
    assert redactor.union([AWKWARD]) is redactor


# -- the wire form, made and redacted once -------------------------------------------------------

COUNTING_CONFTEST = """
import json, pathlib
import pytest
from pytest_benchsdk.records import TaskRecord

calls = {"to_wire": 0}
original = TaskRecord.to_wire

def counting(self):
    calls["to_wire"] += 1
    return original(self)

TaskRecord.to_wire = counting

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    # Before the session end reads the records back (scores, --bench-json): what the way from
    # the iteration to the store and the platform's batches cost.
    pathlib.Path("to_wire.json").write_text(json.dumps(calls))

def pytest_unconfigure():
    TaskRecord.to_wire = original  # the inner session runs in the test's process
"""


def test_a_record_is_turned_into_its_wire_form_once_on_its_way(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runner → report → controller → redaction → store → platform batch: one to_wire()."""
    server = loopback_platform
    use_platform(monkeypatch)
    monkeypatch.setenv("PSECRET", AWKWARD)
    pytester.makeconftest(COUNTING_CONFTEST)
    pytester.makepyfile(bench_x=AWKWARD_BENCH)
    result = pytester.runpytest_inprocess(*bench_args(server))
    result.assert_outcomes(passed=1, failed=1)
    assert json.loads((pytester.path / "to_wire.json").read_text()) == {"to_wire": 2}
    assert len(server.records()) == 2


# -- issue 32, item 4: every logging handler ---------------------------------------------------

LOGGING_BENCH = bench(
    'participants=[Participant("p", required_env_vars=["PSECRET"])], iterations=2',
    """
    import logging

    @define_task
    def task(participant, task_index, measure):
        secret, key = os.environ["PSECRET"], os.environ["BENCHMARKS_PLATFORM_API_KEY"]
        logging.warning("calling with %s and %s", secret, key)
        logging.getLogger("client").error(f"inline {secret!r} {json.dumps({'k': key})}")
        try:
            raise ValueError(f"refused {key}")
        except ValueError:
            logging.getLogger("client").exception("the call failed")
        measure(value=task_index)
    """,
    prelude="import json, os\n",
)

#: A handler of the user's own, added before the session starts (a conftest's).
OWN_HANDLER = """
import logging


def pytest_configure(config):
    handler = logging.FileHandler("own.log")
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logging.getLogger().addHandler(handler)
"""


def test_secrets_are_redacted_in_the_live_log_and_every_logging_handler(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest's live log (``log_cli``), its captured-log sections (``-rA``), ``--log-file``
    and a handler of the user's own receive the records redacted: a participant's secret in
    a quote-and-accent form and the platform key, in the message, its arguments and the
    exception text."""
    monkeypatch.setenv("PSECRET", AWKWARD)
    monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", API_KEY)
    pytester.makepyfile(bench_logs=LOGGING_BENCH)
    pytester.makeconftest(OWN_HANDLER)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:cacheprovider", "-rA",
        "-o", "log_cli=true", "-o", "log_cli_level=INFO", "--log-file=file.log",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    terminal = result.stdout.str() + result.stderr.str()
    files = {name: (pytester.path / name).read_text() for name in ("file.log", "own.log")}
    assert "calling with *** and ***" in terminal  # the live log is on, and redacted
    assert "ValueError: refused ***" in terminal
    for name, text in files.items():
        assert "calling with *** and ***" in text, name
        assert "ValueError: refused ***" in text, name
    for secret in (AWKWARD, API_KEY):
        assert_absent(secret, [terminal], "the terminal")
        for name, text in files.items():
            assert_absent(secret, [text], name)


def test_log_redaction_is_installed_for_a_session_and_removed_after(
    pytester: pytest.Pytester,
) -> None:
    """In the process that ran the session (a program calling ``pytest.main()``), the record
    factory that was there before is back once the session is over, and a factory another
    library set on top of it meanwhile keeps working (the redaction passes records through)."""
    before = logging.getLogRecordFactory()
    pytester.makepyfile(bench_logs=LOGGING_BENCH)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("PSECRET", AWKWARD)
        monkeypatch.setenv("BENCHMARKS_PLATFORM_API_KEY", API_KEY)
        result = pytester.runpytest_inprocess(
            "--bench", "--bench-dry-run", "-p", "no:cacheprovider"
        )
    result.assert_outcomes(passed=2)
    assert logging.getLogRecordFactory() is before
    record = logging.LogRecord("x", logging.WARNING, "f", 1, "key %s", (API_KEY,), None)
    assert API_KEY in record.getMessage()
    redaction = LogRedaction(lambda: Redactor([API_KEY]))
    redaction.install()
    try:
        made = logging.getLogger("x").makeRecord("x", 30, "f", 1, "key %s", (API_KEY,), None)
        assert made.getMessage() == "key ***"
    finally:
        redaction.uninstall()
    assert logging.getLogRecordFactory() is before
