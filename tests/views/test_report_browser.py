"""The ``--bench-html`` report opened in a real browser (headless Chromium, driven by its
command line: ``tests/helpers/browser.py``).

Required when ``CI`` is set (``.ci/run`` installs Chromium); without ``CI`` and without a
Chromium on PATH the tests skip, saying why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.browser import chromium_available, open_in_chromium, rendered_plots
from helpers.sessions import SCORING, bench

if not chromium_available():
    if os.environ.get("CI"):
        pytest.fail(
            "CI is set but no chromium is on PATH: the browser tests are required in CI "
            "(.ci/run installs Debian's chromium when it runs as root)",
            pytrace=False,
        )
    pytest.skip(
        "no chromium on PATH (apt-get install chromium); required when CI is set",
        allow_module_level=True,
    )

#: Three participants, two phases, two steps, a failing iteration, scored.
BENCH = bench(
    'participants=[Participant("alpha-one"), Participant("beta-two"),\n'
    ' Participant("gamma-three")],\n'
    'phases=[Phase("cold", 2), Phase("warm", 4)],\n'
    f"scoring={SCORING}",
    """
    import random

    @define_task
    def task(participant, phase, task_index, step, measure):
        rng = random.Random(task_index * 31 + len(participant.name))
        with step("create"):
            pass
        with step("exec"):
            pass
        if participant.name == "gamma-three" and task_index == 3:
            raise TaskError("quota exceeded", code="quota")
        base = {"alpha-one": 20.0, "beta-two": 30.0, "gamma-three": 45.0}[participant.name]
        measure(value=base * rng.lognormvariate(0, 0.1))
    """,
    slug="browser",
    name="Browser",
)

PARTICIPANTS = ("alpha-one", "beta-two", "gamma-three")


def test_the_helper_sees_console_errors_and_requests(tmp_path: Path) -> None:
    # The checks below are only as good as the helper: a page doing every wrong thing.
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><img src='http://example.invalid/pixel.png'>"
        "<script>console.error('bad-console'); fetch('https://example.org/x').catch(() => {});"
        "undefinedFunction();</script></body></html>",
        encoding="utf-8",
    )
    seen = open_in_chromium(page)
    assert any("bad-console" in line for line in seen.console)
    assert any("Uncaught ReferenceError" in line for line in seen.console)
    assert any("example.invalid/pixel.png" in r for r in seen.page_requests)
    assert any(r.startswith("CONNECT example.org:443") for r in seen.page_requests)


def test_the_report_renders_every_chart_offline_without_console_errors(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_browser=BENCH)
    args = ("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    pytester.runpytest_inprocess(*args)  # a run before: the history has two points
    result = pytester.runpytest_inprocess(*args, "--bench-html", "report.html")
    result.stdout.fnmatch_lines(["Report written to *report.html"])
    seen = open_in_chromium(pytester.path / "report.html")

    # Nothing on the console (any level: the report logs nothing), no request at all.
    assert seen.console == ()
    assert seen.page_requests == ()

    plots = rendered_plots(seen.dom)
    assert [p.chart for p in plots] == [
        "dist-latency_ms",
        "dist-value",
        "steps",
        "timeline",
        "history-latency_ms",
        "history-value",
    ]
    for plot in plots:
        assert plot.rendered, plot.chart  # .js-plotly-plot with its .main-svg
        assert plot.traces == plot.expected_traces, plot.chart  # every trace drawn
    by_chart = {p.chart: p for p in plots}
    # 3 participants x 2 phases, an ECDF and a box each.
    assert by_chart["dist-value"].traces == 12
    # create and exec, median and p95 (stacked bars).
    assert by_chart["steps"].traces == 4
    # a line per participant and the failed iterations' markers.
    assert by_chart["timeline"].traces == 4
    # median and p95 per participant, two runs.
    assert by_chart["history-value"].traces == 6
    for name in PARTICIPANTS:
        # Legend entries and axis labels as the browser drew them.
        assert any(name in text for text in by_chart["dist-value"].texts), name
        assert name in by_chart["steps"].texts
        assert name in by_chart["timeline"].texts
        assert f"{name} median" in by_chart["history-value"].texts
    assert "quota" in seen.dom
