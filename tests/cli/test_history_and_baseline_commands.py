"""``pytest-benchsdk history`` (series of complete runs and their change points),
``pytest-benchsdk baseline list|set|rm``, and the HTML report's history marking the same change
points, on stores written by real sessions."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from helpers.report_pages import figures
from helpers.sessions import bench, store_path, stored_runs
from pytest_benchsdk import ResultStore
from pytest_benchsdk.cli import main
from pytest_benchsdk.results import HISTORY_RULE

SCORED = (
    '{"metrics": [{"key": "value", "unit": "ms", "ceiling": 100, '
    '"weights": {"median": 0.6, "p95": 0.4, "p99": 0}}]}'
)

#: p1 and p2, 20 iterations of a value seeded by task index and $RUN_SEED; $SLOW_P1 scales p1.
BENCH = bench(
    f'participants=[Participant("p1"), Participant("p2")], iterations=20,\nscoring={SCORED}',
    """
    import os, random

    @define_task
    def task(participant, task_index, measure):
        seed = int(os.environ.get("RUN_SEED", "0"))
        rng = random.Random(task_index * 7 + len(participant.name) + seed * 1000)
        base = {"p1": 20.0, "p2": 40.0}[participant.name]
        factor = float(os.environ.get("SLOW_P1", "1")) if participant.name == "p1" else 1.0
        measure(value=base * factor * rng.lognormvariate(0, 0.03))
    """,
)


def _main(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.fixture
def stepped(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Five runs, then four with p1 30 % slower (no gate: each is a complete run), then a
    partial run (-k): the run ids, oldest first."""
    pytester.makepyfile(bench_x=BENCH)
    for seed in range(9):
        monkeypatch.setenv("RUN_SEED", str(seed))
        monkeypatch.setenv("SLOW_P1", "1.3" if seed >= 5 else "1")
        assert pytester.runpytest_inprocess("--bench", "--bench-dry-run").ret == 0
    assert pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-k", "p2").ret == 0
    return [run.run_id for run in stored_runs(store_path(pytester))]


@pytest.mark.slow
def test_history_names_the_run_where_a_change_starts(
    pytester: pytest.Pytester, stepped: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # The value only: the latency is the machine's (a busy machine moves it for real).
    code, out = _main(capsys, "--store", store_path(pytester), "history", "--metric", "value")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == (
        "Demo (demo): 9 complete run(s), oldest first (dry runs; iterations=20, concurrency=1, "
        "staggerDelayMs=0, groupBy=participant)"
    )
    # The rule, as the HTML report states it too (issue 33), then what it left out and why.
    assert " ".join(" ".join(lines[1:3]).split()) == f"Kept: {HISTORY_RULE}."
    del lines[1:3]
    assert lines[1] == (
        "  1 other run(s) left out: 1 not complete (partial, interrupted or unfinished)"
    )
    assert lines[2] == "  p1"
    assert lines[3].split() == ["run", "started", "value", "median", "value", "p95"]
    table = lines[4:13]
    assert [line.split()[0] for line in table] == [f"{r[:12]}…" for r in stepped[:9]]
    # The first slower run carries the marks of p1's value series.
    assert table[5].count("▲") == 2
    assert "▲" not in " ".join(table[:5] + table[6:])
    text = " ".join(out.split())
    first_slow = stepped[5]
    assert re.search(
        rf"value median: \+3\d\.\d% regressed from run {first_slow[:12]}… \(\d{{4}}-\d\d-\d\d "
        r"\d\d:\d\d\): 2\d\.\d → 2\d\.\d ms \(p=0\.0[0-5]\d*\)",
        text,
    ), text
    # p2 did not change.
    p2 = out[out.index("\n  p2\n") :]
    assert "▲" not in p2
    assert "No change point: value median, value p95" in p2


@pytest.mark.slow
def test_history_keeps_the_participants_and_metrics_asked_for(
    pytester: pytest.Pytester, stepped: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _main(
        capsys, "--store", store_path(pytester), "history", "demo",
        "--participant", "p1", "--metric", "value", "--limit", "6",
    )  # fmt: skip
    assert code == 0, out
    lines = out.splitlines()
    assert "6 complete run(s)" in lines[0]
    del lines[1:3]  # the rule
    assert lines[1] == (
        "  4 other run(s) left out: 1 not complete (partial, interrupted or unfinished), 3 older "
        "than the limit"
    )
    assert lines[2] == (
        "  Too few runs for change points: a change needs 8 runs at least to stand out from "
        "shuffling at 5 %."
    )
    assert "  p2" not in lines
    assert lines[lines.index("  p1") + 1].split() == [
        "run", "started", "value", "median", "value", "p95"
    ]  # fmt: skip
    code, out = _main(capsys, "--store", store_path(pytester), "history", "--json")
    assert code == 0
    (history,) = json.loads(out)
    assert history["benchmarkSlug"] == "demo"
    assert [r["runId"] for r in history["runs"]] == stepped[:9]
    series = {(s["participant"], s["metric"], s["statistic"]): s for s in history["series"]}
    (change,) = series[("p1", "value", "median")]["changePoints"]
    assert (change["index"], change["runId"], change["direction"]) == (5, stepped[5], "regressed")
    assert 0.25 < change["change"] < 0.35
    assert series[("p2", "value", "median")]["changePoints"] == []


@pytest.mark.slow
def test_history_errors_are_usage_errors(
    pytester: pytest.Pytester, stepped: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = store_path(pytester)
    code, out = _main(capsys, "--store", store, "history", "nope")
    assert code == 2
    assert "no runs of benchmark nope in " in out
    assert "(benchmarks: demo)" in out
    code, out = _main(capsys, "--store", store, "history", "--limit", "0")
    assert code == 2
    assert "--limit expects an integer >= 1 (got 0)" in out


@pytest.mark.slow
def test_baseline_names_are_listed_set_and_removed(
    pytester: pytest.Pytester, stepped: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = store_path(pytester)
    code, out = _main(capsys, "--store", store, "baseline", "list")
    assert (code, out.strip()) == (
        0,
        f"no baseline names in {store} (pytest --bench-save NAME, or baseline set)",
    )
    code, out = _main(capsys, "--store", store, "baseline", "set", "main", stepped[2][:9])
    assert code == 0, out
    assert out.startswith(f"Baseline main of demo: run {stepped[2][:12]}… (")
    code, out = _main(capsys, "--store", store, "baseline", "set", "main", stepped[3])
    assert out.rstrip().endswith(f"(was run {stepped[2][:12]}…)")
    # A partial run is refused, as --bench-save refuses it; --force names it, with a note.
    code, out = _main(capsys, "--store", store, "baseline", "set", "p2-only", stepped[9])
    assert (code, out.strip()) == (
        2,
        "pytest-benchsdk: error: Baseline p2-only of demo: not saved, the run is not complete: "
        "it ran a subset of the benchmark (-k, a node id, --lf); pytest-benchsdk baseline set "
        f"--force p2-only {stepped[9][:12]} names it anyway",
    )
    code, out = _main(capsys, "--store", store, "baseline", "set", "--force", "p2-only", stepped[9])
    assert code == 0
    assert "note: the run is not complete (it ran a subset" in out
    code, out = _main(capsys, "--store", store, "baseline", "list")
    rows = [line.split()[:3] for line in out.splitlines()]
    assert rows == [
        ["name", "benchmark", "run"],
        ["main", "demo", f"{stepped[3][:12]}…"],
        ["p2-only", "demo", f"{stepped[9][:12]}…"],
    ]
    code, out = _main(capsys, "--store", store, "baseline", "rm", "p2-only")
    assert (code, out.strip()) == (0, "removed baseline p2-only (1 benchmark(s))")
    with ResultStore(store) as opened:
        assert [b.name for b in opened.baselines()] == ["main"]


@pytest.mark.slow
def test_baseline_set_refuses_an_interrupted_run_as_bench_save_does(
    pytester: pytest.Pytester,
) -> None:
    # One rule for what a baseline name may stand for: a session stopped by -x keeps an
    # interrupted run, which --bench-save does not name; the CLI refuses it with the same
    # message (exit status 2) until --force.
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2")], iterations=5',
            """
            @define_task
            def task(participant, task_index, measure):
                if participant.name == "p2" and task_index == 2:
                    raise RuntimeError("boom")
                measure(value=1.0 + task_index)
            """,
        )
    )
    session = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-x", "--bench-save", "main"
    )
    assert session.ret == pytest.ExitCode.TESTS_FAILED
    store = store_path(pytester)
    (run,) = stored_runs(store)
    assert run.status == "interrupted"
    refused = [line for line in session.outlines if line.startswith("Baseline main of demo:")]
    assert refused == [
        "Baseline main of demo: not saved, the run is not complete: it was interrupted "
        f"({run.record_count} of 10 iterations ran); pytest-benchsdk baseline set --force main "
        f"{run.run_id[:12]} names it anyway"
    ]
    cli = [sys.executable, "-m", "pytest_benchsdk", "--store", str(store), "baseline", "set"]
    result = pytester.run(*cli, "main", run.run_id[:12])
    assert result.ret == 2
    assert result.outlines == []
    assert result.errlines == [f"pytest-benchsdk: error: {refused[0]}"]
    with ResultStore(store) as opened:
        assert opened.baselines() == []
    forced = pytester.run(*cli, "--force", "main", run.run_id[:12])
    assert forced.ret == 0, forced.stderr.str()
    assert forced.outlines[0].startswith(f"Baseline main of demo: run {run.run_id[:12]}… (")
    assert forced.outlines[1].startswith("  note: the run is not complete (it was interrupted (")
    with ResultStore(store) as opened:
        assert [(b.name, b.run_id) for b in opened.baselines()] == [("main", run.run_id)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["set", "main", "zzzz"], "no run zzzz in *; closest: *"),
        (["set", "latest", "RUN"], "'latest' cannot be a baseline name: *"),
        (["set", "a b", "RUN"], "a baseline name is letters, digits *"),
        (["rm", "nope"], "no baseline nope in *"),
    ],
)
def test_baseline_errors_are_usage_errors(
    pytester: pytest.Pytester,
    stepped: list[str],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    args = [stepped[0] if a == "RUN" else a for a in args]
    code, out = _main(capsys, "--store", store_path(pytester), "baseline", *args)
    assert code == 2
    assert re.search("pytest-benchsdk: error: " + re.escape(message).replace(r"\*", ".*"), out), out


@pytest.mark.slow
def test_compare_uses_the_history_before_the_current_run(
    pytester: pytest.Pytester, stepped: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _main(capsys, "--store", store_path(pytester), "compare", stepped[4], stepped[5])
    assert code == 0, out
    assert "    Between-run noise: from the 5 earlier complete runs with the same setup" in out
    assert re.search(r"p1 +value +median .* regressed +within-run", out), out


@pytest.mark.slow
def test_the_report_marks_the_change_points_history_finds(
    pytester: pytest.Pytester, stepped: list[str]
) -> None:
    pytest.importorskip("plotly")
    from pytest_benchsdk.report import render_report

    with ResultStore(store_path(pytester)) as store:
        text = render_report(store, [stepped[8]])
    figure = figures(text)["history-value"]
    (marks,) = [
        t for t in figure["data"] if t.get("name") == "change point (pytest-benchsdk history)"
    ]
    # One mark per series that changed (p1's median and p95), at the first slowed run: the
    # 6th stored run of the benchmark.
    assert marks["x"] == ["#6", "#6"]
    assert all("regressed from this run" in t for t in marks["text"])
    assert any(t.startswith("p1 median: +") for t in marks["text"])
    # A dashed line where the change starts (between the 5th and the 6th run of the chart).
    dashed = [s for s in figure["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash"]
    assert [(s["x0"], s["x1"]) for s in dashed] == [(4.5, 4.5)]
    # (The latency chart is not asserted on: a busy machine moves the latency for real.)


def test_baseline_list_shows_each_runs_own_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 46: baselines of the benchmarks of one session all showed the session's start
    # (the time their runs were opened); the list shows when each run's own iterations ran.
    from helpers.runs import record
    from helpers.store_processes import ENV

    store = tmp_path / "results.sqlite3"
    with ResultStore(store) as opened:
        for n, slug in enumerate(("alpha", "beta", "gamma")):
            run_id = opened.begin_run(
                benchmark_slug=slug,
                benchmark_name=slug,
                file=f"bench_{slug}.py",
                knobs={"iterations": 2, "concurrency": 1},
                participants=("p1",),
                config_snapshot={"benchmarkSlug": slug},
                environment=ENV,
                dry_run=True,
            )
            for index in range(2):
                opened.add_record(run_id, "p1", record(index, 500.0, offset=90 * n))
            opened.set_baseline("main", run_id)
    code, out = _main(capsys, "--store", store, "baseline", "list")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[3:5] == ["ran", "(UTC)"]
    assert [row.split()[3:5] for row in rows] == [
        ["2026-12-01", "08:00:00–08:00:01"],
        ["2026-12-01", "08:01:30–08:01:31"],
        ["2026-12-01", "08:03:00–08:03:01"],
    ]
