"""The HTML report (``--bench-html``, ``pytest_benchsdk.report``) without a browser: what is in
the file, the offline guarantee as far as the text goes, the option's glue and errors.
``tests/views/test_report_browser.py`` opens the file in a real browser."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pytest_benchsdk.report as report_package
from helpers.sessions import SCORING, bench, store_path, stored_runs
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.report import render_report, write_report
from pytest_benchsdk.store import ResultStore

REPORT_API = ["render_report", "write_report"]

#: Three participants, two phases, three steps, one failing iteration, scored, seeded values
#: scaled by $SLOWDOWN (a slower run is a regression for --bench-compare).
PHASED = bench(
    'participants=[Participant("alpha"), Participant("beta"), Participant("gamma")],\n'
    'phases=[Phase("cold", 2), Phase("warm", 6)],\n'
    f"scoring={SCORING}",
    """
    import os, random

    @define_task
    def task(participant, phase, task_index, step, measure):
        rng = random.Random(task_index * 31 + len(participant.name))
        factor = float(os.environ.get("SLOWDOWN", "1"))
        with step("create"):
            pass
        with step("exec"):
            pass
        if participant.name == "gamma" and task_index == 5:
            raise TaskError("quota exceeded </script><b>gamma</b>", code="quota")
        base = {"alpha": 20.0, "beta": 30.0, "gamma": 45.0}[participant.name]
        measure(value=base * factor * rng.lognormvariate(0, 0.1))
    """,
    slug="phased",
    name="Phased <demo>",
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:cacheprovider", *args
    )


def _sections(text: str) -> list[str]:
    return re.findall(r"<h3[^>]*>([^<]+)</h3>", text)


def _json_text(text: str) -> str:
    """``text`` as plotly's JSON writes it (non-ASCII escaped)."""
    return json.dumps(text)[1:-1]


def _figure(text: str, chart: str) -> str:
    match = re.search(
        rf'<figure class="chart" data-chart="{re.escape(chart)}".*?</figure>', text, re.S
    )
    assert match is not None, chart
    return match.group(0)


def _figure_data(text: str) -> list[list[dict[str, object]]]:
    """The traces of every ``Plotly.newPlot(id, data, layout, config)`` call in the file."""
    decoder = json.JSONDecoder()
    found = []
    for match in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", text):
        data, _ = decoder.raw_decode(text, match.end())
        found.append(data)
    return found


# --- the public interface ---------------------------------------------------------------------


def test_report_all_is_pinned() -> None:
    assert list(report_package.__all__) == REPORT_API
    for name in REPORT_API:
        assert getattr(report_package, name).__module__ == "pytest_benchsdk.report"


# --- a session's report -----------------------------------------------------------------------


def test_bench_html_writes_every_section_in_order(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    result = _run(pytester, "--bench-html", "out/report.html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the failing iteration
    path = pytester.path / "out" / "report.html"
    result.stdout.fnmatch_lines([f"Report written to {path}"])
    text = path.read_text(encoding="utf-8")
    (run,) = stored_runs(store_path(pytester))
    assert f'data-run-id="{run.run_id}"' in text
    assert _sections(text) == [
        "Ranked scores",
        "Thresholds",
        "Distributions",
        "Steps",
        "Timeline",
        "Failures",
        "History",
        "Run setup",
        "Warnings",
    ]
    # Names are escaped in the HTML (and in plotly's JSON).
    assert "Phased &lt;demo&gt;" in text
    assert "<b>gamma</b>" not in text
    assert "quota exceeded &lt;/script&gt;&lt;b&gt;gamma&lt;/b&gt;" in text
    # Ranked scores: every participant, ranks and intervals from the stored uncertainty.
    scores = text[text.index("Ranked scores") : text.index("Distributions")]
    assert re.findall(r"<td>(alpha|beta|gamma)</td>", scores)[:3] == [
        "alpha",
        "beta",
        "gamma",
    ]
    assert "95% interval" in scores
    assert re.search(r'<td class="num">\d+\.\d–\d+\.\d</td>', scores)
    # One series per participant and phase: an ECDF and a box each.
    assert 'data-chart="dist-latency_ms" data-traces="12"' in text
    assert 'data-chart="dist-value" data-traces="12"' in text
    for label in ("alpha · cold", "alpha · warm", "gamma · warm"):
        assert _json_text(label) in _figure(text, "dist-value")
    # Steps: create and exec, median and p95 each.
    assert 'data-chart="steps" data-traces="4"' in text
    # Timeline: one trace per participant, plus the failed iterations.
    assert 'data-chart="timeline" data-traces="4"' in text
    # Failures: grouped by code with the first messages.
    failures = text[text.index(">Failures<") : text.index(">History<")]
    assert "<td>quota</td>" in failures
    assert "gamma #5: quota exceeded" in failures
    # Setup: knobs, machine, git.
    setup = text[text.index(">Run setup<") : text.index(">Warnings<")]
    for expected in ("Knobs", "machine", "git", "python", run.run_id):
        assert expected in setup
    assert "No baseline comparison stored" in setup


def test_history_of_three_runs_marks_the_regression_and_highlights_this_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    _run(pytester)
    _run(pytester, "--bench-compare")
    monkeypatch.setenv("SLOWDOWN", "1.5")
    result = _run(pytester, "--bench-compare", "--bench-html", "report.html")
    result.stdout.fnmatch_lines(["*regressed*"])
    runs = stored_runs(store_path(pytester))
    assert len(runs) == 3
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    history = _figure(text, "history-value")
    # Three runs on the x axis, oldest first, and the current one highlighted.
    positions = [history.index(run.run_id[:6]) for run in runs]
    assert positions == sorted(positions)
    assert '"x0":1.5,"x1":2.5' in history.replace(" ", "")
    assert _json_text("regressed ▲") in history
    assert "value median regressed" in history
    # Three participants x median and p95, plus the verdict markers.
    assert 'data-traces="7"' in history
    # The stored comparison's table.
    comparison = text[text.index("Baseline comparison") : text.index(">Warnings<")]
    assert runs[1].run_id in comparison
    assert '<td class="regressed">regressed</td>' in comparison


def test_history_limit_and_several_runs_in_one_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    for _ in range(3):
        _run(pytester)
    runs = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        text = render_report(store, [runs[2].run_id, runs[0].run_id], history=2)
    assert text.count('<section class="run"') == 2
    assert text.index(runs[2].run_id) < text.index(f'data-run-id="{runs[0].run_id}"')
    first = text[: text.index(f'data-run-id="{runs[0].run_id}"')]
    assert "last 2 stored run(s)" in first
    assert runs[0].run_id[:6] not in _figure(first, "history-value")
    # plotly.js once for the whole file.
    assert text.count("plotly.js v") == 1


# --- capped: a run with 60,000 failures ---------------------------------------------------------


def test_sixty_thousand_failures_are_grouped_and_capped(tmp_path: Path) -> None:
    from pytest_benchsdk._runenv import collect_run_environment

    with ResultStore(tmp_path / "store.sqlite3") as store:
        run_id = store.begin_run(
            benchmark_slug="errors",
            benchmark_name="Errors",
            file=None,
            knobs={},
            participants=["p"],
            config_snapshot={},
            environment=collect_run_environment({}, tmp_path),
            dry_run=True,
        )
        for i in range(60_000):
            store.add_record(
                run_id,
                "p",
                TaskRecord(
                    task_index=i,
                    status="error",
                    started_at="2026-11-30T10:00:00.000Z",
                    completed_at="2026-11-30T10:00:00.010Z",
                    latency_ms=10.0,
                    error_code=f"code-{i % 80:02d}",
                    data={"errorMessage": f"failure {i} " + "x" * 1000},
                ),
            )
        path = tmp_path / "report.html"
        write_report(store, [run_id], path)
    text = path.read_text(encoding="utf-8")
    assert path.stat().st_size < 8_000_000
    failures = text[text.index(">Failures<") : text.index(">History<")]
    assert "60,000 failed iteration(s)." in failures
    assert failures.count("<td>code-") == 50
    assert '<td class="num">750</td>' in failures
    assert failures.count("<li>") == 50 * 5
    assert "p #0: failure 0 " in failures
    assert "p #80: failure 80 " in failures
    assert "p #400: failure 400" not in failures  # the 6th message of code-00
    assert "x" * 300 not in failures  # messages cut at 300 characters
    assert "22,500 more failure(s) under other error codes" in failures


# --- offline ------------------------------------------------------------------------------------


def test_the_only_urls_in_the_file_are_inside_plotlys_own_library(
    pytester: pytest.Pytester,
) -> None:
    from plotly.offline import get_plotlyjs

    pytester.makepyfile(bench_phased=PHASED)
    _run(pytester, "--bench-html", "report.html")
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    library = get_plotlyjs()
    # plotly.js inlined exactly once, as plotly ships it...
    assert text.count(library) == 1
    rest = text.replace(library, "")
    # ...and nothing else in the file names any address: no script, stylesheet, font, image
    # or link from elsewhere (plotly's logo link is off: displaylogo=False).
    assert re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", rest, re.I) == []
    assert not re.search(r"<(?:link|img|iframe)\b", rest, re.I)
    assert not re.search(r"<script[^>]*\bsrc=", rest, re.I)
    assert "@import" not in rest
    assert "url(" not in rest
    # The library's own addresses are map tiles, CDNs for MathJax/topojson and licence
    # texts: fetched only by map and geo traces and MathJax, none of which a report uses.
    assert {trace["type"] for data in _figure_data(rest) for trace in data} == {
        "scatter",
        "box",
        "bar",
    }
    # A Content Security Policy forbids the page any request anyway.
    assert "default-src 'none'" in rest
    assert "connect-src 'none'" in rest


# --- the option -------------------------------------------------------------------------------


def test_bench_html_without_plotly_is_a_usage_error_naming_the_extra(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    script = textwrap.dedent(
        """
        import sys
        sys.modules["plotly"] = None  # as if the report extra were not installed
        import pytest
        args = ["--bench-dry-run", "--bench-html", "r.html", "-p", "no:cacheprovider"]
        sys.exit(pytest.main(args))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "--bench-html needs plotly: pip install 'pytest-benchsdk[report]'" in done.stderr, (
        done.stderr
    )
    assert not (pytester.path / "r.html").exists()


def test_bench_html_implies_bench_and_rejects_a_directory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    (pytester.path / "adir").mkdir()
    result = pytester.runpytest_inprocess("--bench-html", "adir")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-html adir: is a directory; give a file path*"])
    result = pytester.runpytest_inprocess("--bench-dry-run", "--bench-html", "r.html", "-q")
    assert (pytester.path / "r.html").exists()


def test_bench_html_with_no_store_renders_from_a_temporary_store(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    result = _run(pytester, "--bench-no-store", "--bench-html", "r.html")
    result.stdout.fnmatch_lines(["Report written to *r.html"])
    result.stdout.no_fnmatch_line("Results stored in*")
    assert not store_path(pytester).exists()
    text = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert "last 1 stored run(s)" in text
    assert 'data-chart="dist-value"' in text


def test_a_report_that_cannot_be_written_is_a_session_error_not_a_crash(
    pytester: pytest.Pytester,
) -> None:
    # The task makes the report's path a directory while the session runs.
    pytester.makepyfile(
        bench_x=bench(
            task="""
            import os

            @define_task
            def task(task_index, measure):
                os.makedirs("late/report.html", exist_ok=True)
                measure(value=task_index)
            """
        )
    )
    result = _run(pytester, "--bench-html", "late/report.html", "--bench-json", "r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["Results written to *r.json", "ERROR --bench-html *report.html: cannot write: *"]
    )
    result.stdout.no_fnmatch_line("Report written to*")
    assert (pytester.path / "r.json").exists()
