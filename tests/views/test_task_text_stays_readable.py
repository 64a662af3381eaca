"""What a task writes stays readable. Its own text (a TaskError's code and message) never
drives the terminal:
escape sequences are written as Python escapes in the failure report, the short summary, the
benchmarks section and ``show``; Markdown gets neither an ESC byte nor raw HTML. The store
keeps the original (the record's ``errorCode``). And a task that measures many keys does
not bury the summary under them."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, store_path, stored_records, stored_runs
from pytest_benchsdk.cli import main

# An OSC "set title" sequence, a "clear screen" sequence and raw HTML.
MESSAGE = "\x1b]0;pwned\x07boom \x1b[2J <img src=x onerror=alert(1)>"
TASK = f"""
@define_task
def task(participant, measure):
    if participant.name == "bad":
        raise TaskError({MESSAGE!r} + "\\nsecond line", code="E\\x1b[31mRED")
    measure(value=1.0)
"""


@pytest.fixture
def session(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makepyfile(
        bench_hostile=bench('participants=["good", "bad"], iterations=2', task=TASK)
    )
    return pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:randomly", "--bench-markdown=summary.md"
    )


def test_the_terminal_gets_no_escape_sequence(session: pytest.RunResult) -> None:
    text = session.stdout.str()
    assert "\x1b" not in text
    assert "\x07" not in text
    # The failure report keeps the message's own line break; the escapes read as Python's.
    assert "[TaskError (E\\x1b[31mRED)] \\x1b]0;pwned\\x07boom \\x1b[2J <img" in text
    assert "second line" in text
    assert "FAILED bench_hostile.py::task[bad-0] - [TaskError (E\\x1b[31mRED)]" in text


def test_markdown_gets_no_escape_byte_and_no_raw_html(
    session: pytest.RunResult, pytester: pytest.Pytester
) -> None:
    markdown = (pytester.path / "summary.md").read_text()
    assert "\x1b" not in markdown
    assert "\x07" not in markdown
    assert "<img" not in markdown


def test_show_escapes_and_the_store_keeps_the_original(
    session: pytest.RunResult, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    path = store_path(pytester)
    (run,) = stored_runs(path)
    capsys.readouterr()
    assert main(["--store", str(path), "show", run.run_id]) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown
    assert "\x07" not in shown
    codes = [r["errorCode"] for r in stored_records(path, run.run_id)["bad"]]
    assert codes == ["E\x1b[31mRED"] * 2


WIDE_TASK = """
@define_task
def task(participant, measure):
    measure(**{f"k{i}": float(i) for i in range(50)})
"""


@pytest.mark.slow
def test_a_task_with_many_metrics_lists_twenty_and_says_how_many_more(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_wide=bench('participants=["a", "b"], iterations=2', task=WIDE_TASK))
    short = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:randomly")
    text = short.stdout.str()
    assert "    a            k19 " in text
    assert "    a            k20 " not in text
    # 2 × (50 + cpu_ms) metrics, 40 listed.
    assert "    (62 more metrics not listed: -v lists them; --bench-json" in text
    full = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:randomly", "-v")
    assert "    b            k49 " in full.stdout.str()
    assert "more metrics not listed" not in full.stdout.str()
