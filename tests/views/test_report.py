"""The HTML report (``--bench-html``, ``pytest_benchsdk.report``) without a browser: what is in
the file, the offline guarantee as far as the text goes, the option's glue and errors.
``tests/views/test_report_browser.py`` opens the file in a real browser."""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pytest_benchsdk.report as report_package
from helpers.report_pages import figure_list, figures, plotly_source, strings, without_plotly
from helpers.sessions import SCORING, bench, read_json, store_path, stored_runs
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.report import render_report, write_report
from pytest_benchsdk.report._charts import chart_text
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


# --- the public interface ---------------------------------------------------------------------


def test_report_all_is_pinned() -> None:
    assert list(report_package.__all__) == REPORT_API
    for name in REPORT_API:
        assert getattr(report_package, name).__module__ == "pytest_benchsdk.report"


# --- a session's report -----------------------------------------------------------------------


@pytest.mark.slow
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
    names = {trace.get("name") for trace in figures(text)["dist-value"]["data"]}
    assert {"alpha · cold", "alpha · warm", "gamma · warm"} <= names
    # Steps: create and exec side by side (their medians).
    assert 'data-chart="steps" data-traces="2"' in text
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


@pytest.mark.slow
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
    history = figures(text)["history-value"]
    # Three runs on the x axis, oldest first, numbered; the hover has each one's date and id;
    # the current one highlighted.
    layout = history["layout"]
    assert layout["xaxis"]["categoryarray"] == ["#1", "#2", "#3"]
    assert layout["xaxis"]["tickangle"] == 0
    median = next(t for t in history["data"] if t["name"] == "alpha" and t["showlegend"])
    assert median["x"] == ["#1", "#2", "#3"]
    assert all(run.run_id[:8] in when for run, when in zip(runs, median["customdata"], strict=True))
    assert (layout["shapes"][0]["x0"], layout["shapes"][0]["x1"]) == (1.5, 2.5)
    # The legend beside the plot, not under the axis.
    assert layout["legend"]["orientation"] == "v"
    assert layout["legend"]["x"] > 1
    marks = next(t for t in history["data"] if "regressed ▲" in t["name"])
    assert any("value median regressed" in text for text in marks["text"])
    # The latency was compared and did not change: no mark on its history (a mark is the
    # charted metric's verdict, not any verdict of the participant).
    latency = figures(text)["history-latency_ms"]["data"]
    assert not [t for t in latency if "regressed ▲" in t["name"]]
    # Three participants x median and p95, the two line styles' legend entries, the verdict
    # markers.
    assert 'data-chart="history-value" data-traces="9"' in text
    # The stored comparison's table.
    comparison = text[text.index("Baseline comparison") : text.index(">Warnings<")]
    assert runs[1].run_id in comparison
    assert '<td class="regressed">regressed</td>' in comparison


@pytest.mark.slow
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
    assert "over 2 comparable run(s)" in first
    history = figures(first)["history-value"]
    assert history["layout"]["xaxis"]["categoryarray"] == ["#2", "#3"]
    assert runs[0].run_id[:8] not in json.dumps(history)
    # plotly.js once for the whole file.
    assert text.count('id="plotly-js"') == 1


# --- reading at a glance --------------------------------------------------------------------

#: Participants 40 times apart on ``value``; three steps whose display order is not the order
#: they run in; a metric every iteration measures the same; scored.
GLANCE = bench(
    'participants=[Participant("sqlite-mem"), Participant("keepalive"),\n'
    ' Participant("new-client")],\n'
    "iterations=24,\n"
    f"scoring={SCORING},\n"
    'display={"steps": [{"key": "connect", "label": "TCP connect", "order": 1},\n'
    '                   {"key": "send", "label": "send the request", "order": 2},\n'
    '                   {"key": "read", "label": "read the body", "order": 3}],\n'
    '         "metrics": [{"key": "value", "label": "request time"},\n'
    '                     {"key": "retries", "label": "retries"}]}',
    """
    import os, random

    @define_task
    def task(participant, task_index, step, measure):
        rng = random.Random(task_index * 31 + len(participant.name))
        factor = float(os.environ.get("SLOWDOWN", "1"))
        base = {"sqlite-mem": 1.0, "keepalive": 5.0, "new-client": 40.0}[participant.name]
        with step("read"):
            pass
        with step("connect"):
            pass
        with step("send"):
            pass
        measure(value=base * factor * rng.lognormvariate(0, 0.1), retries=2)
    """,
    slug="glance",
    name="Glance",
)


@pytest.mark.slow
def test_log_axes_steps_labels_constants_and_the_relative_summary(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_glance=GLANCE)
    _run(pytester, "--bench-html", "report.html", "--bench-json", "run.json")
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    charts = figures(text)
    result = read_json(pytester.path / "run.json")["benchmarks"][0]["result"]

    # 40x apart: the value opens on a log axis, both panels; every distribution chart has the
    # linear/log buttons (plotly's own updatemenus), the active one first.
    value = charts["dist-value"]["layout"]
    assert value["xaxis"]["type"] == value["xaxis2"]["type"] == "log"
    for key in ("dist-latency_ms", "dist-value"):
        (menu,) = charts[key]["layout"]["updatemenus"]
        labels = [b["label"] for b in menu["buttons"]]
        assert labels == ["linear axis", "log axis"], key
        log_args = menu["buttons"][1]["args"][0]
        assert log_args["xaxis.type"] == log_args["xaxis2.type"] == "log"
        assert menu["buttons"][0]["args"][0]["xaxis.type"] == "linear"
    assert charts["dist-value"]["layout"]["updatemenus"][0]["active"] == 1
    assert "Log axis: the medians differ" in text
    # The display label names the metric in its chart.
    assert "request time (ms): distribution per participant" in json.dumps(
        charts["dist-value"]["layout"]["title"]
    )

    # A metric whose every sample is the same gets a sentence, not a chart (no axis ticking
    # 1.999…2.001 around one value).
    assert "dist-retries" not in charts
    assert "retries: constant, every sample of every participant is 2.00 (no chart)." in text

    # Steps: the medians side by side, one bar trace per step, display labels in display order.
    steps = charts["steps"]
    assert steps["layout"]["barmode"] == "group"
    assert [t["name"] for t in steps["data"]] == [
        "TCP connect",
        "send the request",
        "read the body",
    ]
    by_step = {
        s["label"]: s["latency"]["median"]
        for p in result["participants"]
        if p["name"] == "keepalive"
        for s in p["steps"]
    }
    connect = steps["data"][0]
    assert connect["x"] == ["sqlite-mem", "keepalive", "new-client"]
    assert math.isclose(connect["y"][1], by_step["TCP connect"], rel_tol=1e-3, abs_tol=1e-9)

    # The relative summary under the ranking: the model's, sentence for sentence.
    relative = result["relative"]
    assert relative["reference"] == "sqlite-mem"
    assert [r["participant"] for r in relative["rows"]] == ["keepalive", "new-client"]
    scores = text[text.index("Ranked scores") : text.index(">Thresholds<")]
    items = re.findall(r"<li>([^<]+)</li>", scores)
    assert len(items) == 2
    assert items[1].startswith("sqlite-mem: ")
    assert " faster than new-client on request time median, 95 % CI " in items[1]
    factor = relative["rows"][1]["factor"]
    assert 30 < factor < 55
    assert relative["rows"][1]["low"] <= factor <= relative["rows"][1]["high"]


@pytest.mark.slow
def test_a_stored_baseline_is_drawn_beside_each_participant(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_glance=GLANCE)
    _run(pytester)
    monkeypatch.setenv("SLOWDOWN", "1.3")
    _run(pytester, "--bench-compare", "--bench-html", "report.html")
    runs = stored_runs(store_path(pytester))
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    data = figures(text)["dist-value"]["data"]
    ecdf = [(t["legendgroup"], t["name"]) for t in data if t["type"] == "scatter"]
    # The legend groups each participant's series under its name.
    assert ecdf == [
        ("sqlite-mem", "this run"),
        ("sqlite-mem", "baseline"),
        ("keepalive", "this run"),
        ("keepalive", "baseline"),
        ("new-client", "this run"),
        ("new-client", "baseline"),
    ]
    scatter = [t for t in data if t["type"] == "scatter"]
    baseline = next(
        t for t in scatter if t["legendgroup"] == "keepalive" and t["name"] == "baseline"
    )
    current = next(
        t for t in scatter if t["legendgroup"] == "keepalive" and t["name"] == "this run"
    )
    assert baseline["line"]["dash"] == "dot"
    assert baseline["line"]["color"] == current["line"]["color"]
    # The baseline's samples: 1.3 times smaller than this run's.
    assert max(baseline["x"]) < max(current["x"])
    assert runs[0].run_id in text[text.index('data-chart="dist-value"') :]


@pytest.mark.slow
def test_every_string_a_chart_draws_is_plain_text_to_plotly(pytester: pytest.Pytester) -> None:
    hostile = '<a href="https://evil.example/x">x</a> $x$ %{y} {z} & <br>'
    pytester.makepyfile(
        bench_hostile=bench(
            f"participants=[Participant({hostile!r}), Participant('plain')],\n"
            f"phases=[Phase({hostile!r}, 2), Phase('warm', 2)],\n"
            f'display={{"metrics": [{{"key": "v", "label": {hostile!r}, "unit": {hostile!r}}}]}}',
            f"""
            @define_task
            def task(participant, task_index, step, measure):
                with step({hostile!r}):
                    pass
                measure({{{hostile!r}: task_index, "v": task_index}})
            """,
            slug="hostile",
            name=hostile,
        )
    )
    _run(pytester)
    _run(pytester, "--bench-html", "report.html")
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    found = figure_list(text)
    # The glance chart, cpu_ms's distribution and history among them; the hostile metric holds
    # exactly v's samples: one chart for both, titled with both labels.
    assert len(found) == 9
    # Our own markup only: the names' tags, TeX and templates are written as entities.
    ours = re.compile(r"<br>|</?extra>|%\{[a-z0-9.\[\]]+\}")
    for key, _, figure in found:
        for value in strings(figure):
            rest = ours.sub("", value)
            assert "<" not in rest, (key, value)
            assert ">" not in rest, (key, value)
            assert "$" not in rest, (key, value)
            assert "{" not in rest, (key, value)
    escaped = chart_text(hostile)
    assert escaped == (
        '&lt;a href="https://evil.example/x"&gt;x&lt;/a&gt; &#36;x&#36; %&#123;y&#125; '
        "&#123;z&#125; &amp; &lt;br&gt;"
    )
    everything = [v for _, _, figure in found for v in strings(figure)]
    assert any(escaped in v for v in everything)  # the names are there, escaped
    # Nothing in a figure's JSON can end its script block.
    assert "</script" not in "".join(
        re.findall(r'type="application/json"[^>]*>(.*?)</script>', text, re.S)
    )


# --- capped: a run with 60,000 failures ---------------------------------------------------------


@pytest.mark.slow
def test_sixty_thousand_failures_are_grouped_and_capped(tmp_path: Path) -> None:
    from pytest_benchsdk._base.runenv import collect_run_environment

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


@pytest.mark.slow
def test_the_only_urls_in_the_file_are_inside_plotlys_own_library(
    pytester: pytest.Pytester,
) -> None:
    from plotly.offline import get_plotlyjs

    pytester.makepyfile(bench_phased=PHASED)
    _run(pytester, "--bench-html", "report.html")
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    # plotly.js carried once, exactly as plotly ships it (gzipped, base64)...
    assert plotly_source(text) == get_plotlyjs()
    assert get_plotlyjs()[:200] not in text
    rest = without_plotly(text)
    # ...and nothing else in the file names any address: no script, stylesheet, font, image
    # or link from elsewhere (plotly's logo link is off: displaylogo=False).
    assert re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", rest, re.I) == []
    assert not re.search(r"<(?:link|img|iframe)\b", rest, re.I)
    assert not re.search(r"<script[^>]*\bsrc=", rest, re.I)
    assert "@import" not in rest
    assert "url(" not in rest
    # The library's own addresses are map tiles, CDNs for MathJax/topojson and licence
    # texts: fetched only by map and geo traces and MathJax, none of which a report uses.
    assert {t["type"] for figure in figures(rest).values() for t in figure["data"]} == {
        "scatter",
        "box",
        "bar",
    }
    # A Content Security Policy forbids the page any request anyway, and runs only the
    # scripts with the page's nonce: the loader (the figures and plotly.js are data blocks).
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', rest)
    assert csp is not None
    policy = dict(part.strip().partition(" ")[::2] for part in csp.group(1).split(";"))
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'none'"
    nonce = re.fullmatch(r"'nonce-([A-Za-z0-9_-]{20,})'", policy["script-src"])
    assert nonce is not None
    assert "unsafe" not in policy["script-src"]
    scripts = re.findall(r"<script([^>]*)>", text)
    runnable = [s for s in scripts if "type=" not in s]
    assert runnable == [f' nonce="{nonce.group(1)}"']
    assert {re.search(r'type="([^"]+)"', s).group(1) for s in scripts if "type=" in s} == {  # type: ignore[union-attr]
        "application/json",
        "application/octet-stream",
    }
    # A new nonce for every render.
    with ResultStore(store_path(pytester)) as store:
        again = render_report(store, [stored_runs(store_path(pytester))[-1].run_id])
    assert nonce.group(1) not in again


# --- the option -------------------------------------------------------------------------------


@pytest.mark.slow
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


@pytest.mark.slow
def test_bench_html_implies_bench_and_rejects_a_directory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    (pytester.path / "adir").mkdir()
    result = pytester.runpytest_inprocess("--bench-html", "adir")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-html adir: is a directory; give a file path*"])
    result = pytester.runpytest_inprocess("--bench-dry-run", "--bench-html", "r.html", "-q")
    assert (pytester.path / "r.html").exists()


@pytest.mark.slow
def test_bench_html_with_no_store_renders_from_a_temporary_store(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    result = _run(pytester, "--bench-no-store", "--bench-html", "r.html")
    result.stdout.fnmatch_lines(["Report written to *r.html"])
    result.stdout.no_fnmatch_line("Results stored in*")
    assert not store_path(pytester).exists()
    text = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert "over 1 comparable run(s)" in text
    assert 'data-chart="dist-value"' in text


@pytest.mark.slow
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


# --- issue 33: one history rule; the report at a glance ---------------------------------------


@pytest.mark.slow
def test_the_history_keeps_the_runs_pytest_benchsdk_history_keeps(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three full runs, one with fewer providers (another setup), one partial (-k), one full:
    the report's history and ``pytest-benchsdk history`` hold the same four runs, state the
    same rule, and say the same about the two they left out."""
    from pytest_benchsdk.cli import main
    from pytest_benchsdk.results import HISTORY_RULE

    pytester.makepyfile(bench_phased=PHASED)
    for _ in range(3):
        _run(pytester)
    _run(pytester, "--bench-provider", "alpha,beta")
    _run(pytester, "-k", "alpha")
    _run(pytester, "--bench-html", "report.html")
    runs = stored_runs(store_path(pytester))
    assert len(runs) == 6
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    history = figures(text)["history-value"]
    # Runs #4 (two providers) and #5 (partial) are not drawn; every line has a point per run.
    assert history["layout"]["xaxis"]["categoryarray"] == ["#1", "#2", "#3", "#6"]
    lines = [t for t in history["data"] if t.get("mode") == "lines+markers"]
    assert len(lines) == 6
    assert all(len(t["y"]) == 4 and None not in t["y"] for t in lines)
    kept = [r.run_id for i, r in enumerate(runs) if i not in (3, 4)]
    drawn = json.dumps(history)
    assert all(run_id[:8] in drawn for run_id in kept)
    assert runs[3].run_id[:8] not in drawn
    assert runs[4].run_id[:8] not in drawn
    left_out = "2 other run(s) left out: 1 with another setup, 1 not complete"
    note = re.search(r'<p class="muted history-rule">([^<]*)</p>', text)
    assert note is not None
    assert html.unescape(note.group(1)).count(HISTORY_RULE) == 1
    assert left_out in note.group(1)

    code = main(["--store", str(store_path(pytester)), "history", "phased"])
    out = capsys.readouterr().out
    assert code == 0
    assert "4 complete run(s)" in out
    assert " ".join(HISTORY_RULE.split()) in " ".join(out.split())
    assert left_out in out
    shown = re.findall(r"^\s{4}([0-9a-f]{12})…", out, flags=re.MULTILINE)
    assert set(shown) == {run_id[:12] for run_id in kept}


@pytest.mark.slow
def test_a_partial_run_says_it_is_not_in_its_own_history(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_phased=PHASED)
    _run(pytester)
    _run(pytester, "-k", "alpha", "--bench-html", "report.html")
    text = html.unescape((pytester.path / "report.html").read_text(encoding="utf-8"))
    assert "This run is not in it: it ran a subset of the benchmark (-k, a node id, --lf)." in text
    assert figures(text)["history-value"]["layout"]["xaxis"]["categoryarray"] == ["#1"]


#: Six participants, phases, a higher-is-better scored metric; the task's latency is returned
#: as the measured ``request_ms`` (exactly the same samples), ``near_ms`` is the latency plus a
#: few µs (not the same samples), ``payload`` is always 1024.
AT_A_GLANCE = bench(
    "participants=[" + ", ".join(f'Participant("p{n}")' for n in range(6)) + "],\n"
    'phases=[Phase("cold", 2), Phase("warm", 4)],\n'
    'display={"metrics": [{"key": "mbps", "label": "Throughput", "unit": "MB/s",\n'
    '                      "direction": "higher-better"},\n'
    '                     {"key": "request_ms", "label": "request", "unit": "ms"}]},\n'
    'scoring={"metrics": [{"key": "mbps", "ceiling": 1000, "higher_is_better": True,\n'
    '                      "weights": {"median": 0.6, "p95": 0.25, "p99": 0.15}}]}',
    """
    import random

    @define_task
    def task(participant, task_index, measure):
        rng = random.Random(task_index * 31 + int(participant.name[1:]))
        ms = (1 + int(participant.name[1:])) * rng.lognormvariate(0, 0.1)
        measure(mbps=100 / ms, request_ms=ms, near_ms=ms + 0.005, payload=1024)
        return {"latency_ms": ms}
    """,
    slug="glance6",
    name="At a glance",
)


@pytest.mark.slow
def test_the_report_opens_with_the_scores_and_draws_each_dataset_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_glance=AT_A_GLANCE)
    _run(pytester, "--bench-html", "report.html")
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    charts = figures(text)
    # The scores as a chart, before the first table: best first, with their intervals.
    assert text.index('data-chart="glance"') < text.index("<table")
    (bars,) = charts["glance"]["data"]
    assert bars["y"] == ["p0", "p1", "p2", "p3", "p4", "p5"]
    assert bars["x"] == sorted(bars["x"], reverse=True)
    assert len(bars["error_x"]["array"]) == 6
    # request_ms holds exactly the latency's samples: one chart, titled with both; near_ms
    # is a few µs off: its own chart (only an exact duplicate is skipped).
    assert "dist-request_ms" not in charts
    assert "history-request_ms" not in charts
    assert "latency = request (ms)" in json.dumps(charts["dist-latency_ms"]["layout"]["title"])
    assert "request holds exactly the same samples as latency" in text
    assert "dist-near_ms" in charts
    # A constant metric: a sentence, no chart (in the distributions and in the history).
    assert "dist-payload" not in charts
    assert "history-payload" not in charts
    assert "payload: constant, every sample of every participant is 1024 (no chart)." in text
    assert "payload: constant, 1024 in every run (no chart)." in text
    # 12 series in the ECDF: the legend groups them under 6 names, and the figure is tall
    # enough for every legend line.
    ecdf = [t for t in charts["dist-mbps"]["data"] if t["type"] == "scatter"]
    assert {t["legendgroup"] for t in ecdf} == {f"p{n}" for n in range(6)}
    assert {t["name"] for t in ecdf} == {"cold", "warm"}
    assert charts["dist-mbps"]["layout"]["height"] >= 84 + 60 + 19 * (12 + 6)


@pytest.mark.slow
def test_an_unscored_report_opens_with_the_relative_latency(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_plain=bench(
            'participants=[Participant("fast"), Participant("slow")]',
            """
            import time

            @define_task
            def task(participant):
                time.sleep(0.001 if participant.name == "fast" else 0.02)
            """,
            slug="plain",
            name="Plain",
        )
    )
    _run(pytester, "--bench-html", "report.html")
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    (bars,) = figures(text)["glance"]["data"]
    assert bars["y"] == ["fast", "slow"]
    assert bars["x"][0] == 1
    assert bars["x"][1] > 2
