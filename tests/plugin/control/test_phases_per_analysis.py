"""Every analysis per participant × phase (issue 30, part 1): real cold/warm bench files."""

from __future__ import annotations

import json
import re

import pytest

from helpers.sessions import bench, store_path, stored_runs
from pytest_benchsdk.cli import main

_PRELUDE = "import random\n"
_COLD_WARM_SCORING = (
    '{"metrics": [{"key": "request_ms", "unit": "ms", "ceiling": 1000, '
    '"weights": {"median": 0.6, "p95": 0.4, "p99": 0}}]}'
)

#: Cold is ten times slower than warm (the point of the phases); every sample jitters ±10 %.
#: ``drifting`` really drifts within warm: 10 ms at its start, 56 ms at its end.
COLD_WARM = bench(
    'participants=[Participant("steady"), Participant("drifting")],\n'
    'phases=[Phase("cold", 12), Phase("warm", 24)],\n'
    f"scoring={_COLD_WARM_SCORING}",
    """
    @define_task
    def task(participant, phase, task_index, measure):
        jitter = random.Random(task_index).uniform(0.9, 1.1)
        base = 100 if phase == "cold" else 10
        if participant.name == "drifting" and phase == "warm":
            base = 10 + 2 * (task_index - 12)
        measure(request_ms=base * jitter)
    """,
    prelude=_PRELUDE,
)


def test_the_phase_boundary_is_no_trend_but_a_drift_within_a_phase_is(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_cw=COLD_WARM)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-json", "out.json", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=72)
    text = result.stdout.str()
    # Pooled, steady's cold samples were a first outlier and a -90 % trend.
    assert "warning [trend] steady" not in text
    assert "warning [first-outlier]" not in text
    lines = text.splitlines()
    assert not any(line.startswith("  warning [") and "steady" in line for line in lines)
    result.stdout.fnmatch_lines(
        ["  warning [[]trend[]] drifting · warm (request_ms): later iterations are higher*"]
    )
    (benchmark,) = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    trends = [w for w in benchmark["warnings"] if w["code"] == "trend"]
    assert [(w["participant"], w["phase"]) for w in trends] == [("drifting", "warm")]


#: fast takes 5 ms warm and 50 ms cold; the warm p95 limit holds, a cold one is breached.
PHASED_THRESHOLDS = bench(
    'participants=[Participant("fast")],\n'
    'phases=[Phase("cold", 3), Phase("warm", 4)],\n'
    'thresholds={"value": ["warm: p95 < 20", "median < 30"], "success_rate": ">= 0.99"}',
    """
    @define_task
    def task(participant, phase, measure):
        measure(value=50 if phase == "cold" else 5)
    """,
)


def test_a_threshold_names_its_phase_and_one_without_is_judged_per_phase(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=PHASED_THRESHOLDS)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-v", "--bench-json", "out.json", "-p", "no:randomly"
    )
    result.stdout.fnmatch_lines(
        [
            "bench_x.py::threshold[[]fast-warm-value-p95<20] PASSED*",
            "bench_x.py::threshold[[]fast-cold-value-median<30] FAILED*",
            "bench_x.py::threshold[[]fast-warm-value-median<30] PASSED*",
            "bench_x.py::threshold[[]fast-cold-success_rate->=0.99] PASSED*",
            "bench_x.py::threshold[[]fast-warm-success_rate->=0.99] PASSED*",
        ]
    )
    result.stdout.fnmatch_lines(["fast · cold: value median = 50.0, threshold < 30: breached"])
    result.assert_outcomes(passed=11, failed=1)
    (benchmark,) = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    outcomes = {(v["phase"], v["label"]): v["outcome"] for v in benchmark["thresholds"]}
    assert outcomes == {
        ("warm", "warm-value-p95<20"): "passed",
        ("cold", "cold-value-median<30"): "failed",
        ("warm", "warm-value-median<30"): "passed",
        ("cold", "cold-success_rate->=0.99"): "passed",
        ("warm", "warm-success_rate->=0.99"): "passed",
    }


def test_a_cli_threshold_names_its_phase(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=PHASED_THRESHOLDS)
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "-v",
        "-p",
        "no:randomly",
        "-k",
        "task or warm-value-max",
        "--bench-threshold",
        "value: warm: max < 4",
    )
    result.stdout.fnmatch_lines(
        [
            "bench_x.py::threshold[[]fast-warm-value-max<4] FAILED*",
            "fast · warm: value max = 5.00, threshold < 4: breached",
        ]
    )
    result.assert_outcomes(passed=7, failed=1)


def test_an_unknown_phase_on_the_command_line_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=PHASED_THRESHOLDS)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-threshold", "value: hot: p95 < 4"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --bench-threshold value: hot:p95<4: no collected benchmark has the phase "
            "'hot' (phases of bench_x.py: cold, warm)"
        ]
    )


def test_an_unknown_phase_in_the_config_is_a_config_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("fast")],\n'
            'phases=[Phase("cold", 1), Phase("warm", 1)],\n'
            'thresholds={"value": "hot: p95 < 20"}'
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.stdout.fnmatch_lines(
        [
            "*thresholds.value: 'hot:p95<20' names the phase 'hot', which the benchmark does "
            "not have (its phases: cold, warm)*"
        ]
    )
    assert result.ret != pytest.ExitCode.OK


#: 20 cold and 20 warm iterations of a jittered value; $COLD_SLOWDOWN scales cold alone.
COLD_ONLY_REGRESSION = bench(
    'participants=[Participant("p1")],\n'
    'phases=[Phase("cold", 20), Phase("warm", 20)],\n'
    f"scoring={_COLD_WARM_SCORING}",
    """
    import os

    @define_task
    def task(participant, phase, task_index, measure):
        jitter = random.Random(task_index).lognormvariate(0, 0.05)
        if phase == "cold":
            base = 100 * float(os.environ.get("COLD_SLOWDOWN", "1"))
        else:
            base = 10
        measure(request_ms=base * jitter)
    """,
    prelude=_PRELUDE,
)


def test_compare_rows_are_per_phase_in_every_view(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytester.makepyfile(bench_x=COLD_ONLY_REGRESSION)
    args = ("--bench", "--bench-dry-run", "-p", "no:randomly")
    assert pytester.runpytest_inprocess(*args).ret == 0
    monkeypatch.setenv("COLD_SLOWDOWN", "1.5")
    result = pytester.runpytest_inprocess(
        *args,
        "--bench-compare",
        "--bench-json",
        "out.json",
        "--bench-markdown",
        "out.md",
        "--bench-export",
        "bmf:out.bmf.json",
    )
    # Pooled, the +50 % of cold was diluted by warm's unchanged half; per phase it stands out
    # and warm stays unchanged.
    result.stdout.fnmatch_lines(
        [
            "    p1 · cold    request_ms  median  * ms *+50.0%*regressed*",
            "    p1 · cold    request_ms  p95     * ms *regressed*",
            "    p1 · warm    request_ms  median  * ms *+0.0%*unchanged*",
            "    p1 · warm    request_ms  p95     * ms *unchanged*",
        ]
    )
    (benchmark,) = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    rows = benchmark["comparison"]["rows"]
    assert [(r["phase"], r["statistic"], r["verdict"]) for r in rows] == [
        ("cold", "median", "regressed"),
        ("cold", "p95", "regressed"),
        ("warm", "median", "unchanged"),
        ("warm", "p95", "unchanged"),
    ]
    markdown = (pytester.path / "out.md").read_text()
    assert "| p1 · cold | request_ms | median |" in markdown
    assert "| p1 · warm | request_ms | median |" in markdown
    bmf = json.loads((pytester.path / "out.bmf.json").read_text())
    assert set(bmf) == {"demo/p1", "demo/p1 · cold", "demo/p1 · warm"}
    assert bmf["demo/p1 · cold"]["request_ms median"]["value"] > 140
    # `show` renders the stored comparison: the same rows.
    current = stored_runs(store_path(pytester))[-1].run_id
    assert main(["--store", str(store_path(pytester)), "show", current]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"p1 · cold +request_ms +median .* regressed", shown), shown
    assert re.search(r"p1 · warm +request_ms +median .* unchanged", shown), shown


def test_history_follows_each_phase(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_x=COLD_ONLY_REGRESSION)
    for _ in range(2):
        assert pytester.runpytest_inprocess("--bench", "--bench-dry-run").ret == 0
    capsys.readouterr()
    store = str(store_path(pytester))
    assert main(["--store", store, "history", "demo", "--metric", "request_ms", "--json"]) == 0
    (history,) = json.loads(capsys.readouterr().out)
    series = [(s["participant"], s["phase"], s["statistic"]) for s in history["series"]]
    assert series == [
        ("p1", None, "median"),
        ("p1", None, "p95"),
        ("p1", "cold", "median"),
        ("p1", "cold", "p95"),
        ("p1", "warm", "median"),
        ("p1", "warm", "p95"),
    ]
    cold = history["series"][2]["points"]
    assert len(cold) == 2
    assert cold[0]["value"] > 90
    assert main(["--store", store, "history", "demo", "--metric", "request_ms"]) == 0
    text = capsys.readouterr().out
    assert "  p1 · cold" in text.splitlines()
    assert "  p1 · warm" in text.splitlines()


@pytest.mark.slow
def test_the_unscored_metrics_have_phase_rows_in_every_view(pytester: pytest.Pytester) -> None:
    # request_ms is scored; cpu_ms (every sync iteration's) is not: its table has a row per
    # phase under the participant's, in the terminal, the Markdown summary and the HTML report.
    pytester.makepyfile(bench_cw=COLD_WARM)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-p", "no:randomly", "-k", "steady",
        "--bench-markdown", "out.md", "--bench-html", "out.html",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "  Metrics (not scored):",
            "    participant *metric  med/p95/p99 * n",
            "    steady *cpu_ms  * 36",
            "      steady · cold  cpu_ms  * 12",
            "      steady · warm  cpu_ms  * 24",
        ]
    )
    markdown = (pytester.path / "out.md").read_text()
    metrics = markdown[markdown.index("**Metrics (not scored)**") :]
    assert re.search(r"\| ↳ `?steady · cold`? \| `?cpu_ms`? \| .* \| 12 \|", metrics), metrics
    assert re.search(r"\| ↳ `?steady · warm`? \| `?cpu_ms`? \| .* \| 24 \|", metrics), metrics
    page = (pytester.path / "out.html").read_text()
    metrics_html = page[page.index("<h4>Metrics (not scored)</h4>") :]
    metrics_html = metrics_html[: metrics_html.index("</table>")]
    assert re.search(r'<tr class="phase"><td>steady · cold</td><td>cpu_ms</td>', metrics_html)
    assert re.search(r'<tr class="phase"><td>steady · warm</td><td>cpu_ms</td>', metrics_html)
