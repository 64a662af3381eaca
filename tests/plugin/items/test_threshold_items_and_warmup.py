"""Thresholds as items and warm-up iterations, end to end with real sessions."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from helpers.e2e import bench_args, use_platform
from helpers.platform_server import LoopbackPlatform
from helpers.sessions import SCORING, assert_usage_error, bench, store_path, stored_runs
from pytest_benchsdk import ResultStore

#: fast measures 5 ms, slow 25 ms; warm-up iterations (negative task index) 75 ms more.
TWO_SPEEDS = bench(
    'participants=[Participant("fast"), Participant("slow")], iterations=4,\n'
    f"scoring={SCORING},\n"
    'thresholds={"value": ["p95 < 20", "median <= 30"], "success_rate": ">= 0.99",\n'
    '            "score": ">= 70"}',
    """
    @define_task
    def task(participant, task_index, measure):
        extra = 75 if task_index < 0 else 0
        measure(value={"fast": 5, "slow": 25}[participant.name] + extra)
    """,
)


def test_each_threshold_is_an_item_after_its_participant(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=TWO_SPEEDS)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-v", "--junitxml", "junit.xml"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=15, failed=1)
    result.stdout.fnmatch_lines(
        [
            "bench_x.py::task[[]fast-3] PASSED*",
            "bench_x.py::threshold[[]fast-value-p95<20] PASSED*",
            "bench_x.py::threshold[[]fast-value-median<=30] PASSED*",
            "bench_x.py::threshold[[]fast-success_rate->=0.99] PASSED*",
            "bench_x.py::threshold[[]fast-score->=70] PASSED*",
            "bench_x.py::task[[]slow-0] PASSED*",
            "bench_x.py::threshold[[]slow-value-p95<20] FAILED*",
            "*_ threshold[[]slow-value-p95<20] _*",
            "slow: value p95 = 25.0 ms, threshold < 20 ms: breached",
        ]
    )
    cases = {
        case.get("name"): case for case in ET.parse(pytester.path / "junit.xml").iter("testcase")
    }
    assert cases["threshold[slow-value-p95<20]"].find("failure") is not None
    assert cases["threshold[fast-score->=70]"].find("failure") is None


def test_k_selects_thresholds_and_cli_thresholds_add(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=TWO_SPEEDS)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-k", "fast", "--bench-threshold", "value: max < 4", "-v"
    )
    result.assert_outcomes(passed=8, failed=1)
    result.stdout.fnmatch_lines(
        [
            "bench_x.py::threshold[[]fast-value-max<4] FAILED*",
            "fast: value max = 5.00 ms, threshold < 4 ms: breached",
        ]
    )


@pytest.mark.slow
def test_thresholds_hold_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(bench_x=TWO_SPEEDS)
    result = pytester.runpytest_inprocess(
        "-p", "xdist", "-n", "2", "--dist", "loadgroup", "--bench", "--bench-dry-run", "-rf"
    )
    result.assert_outcomes(passed=15, failed=1)
    result.stdout.fnmatch_lines(["FAILED bench_x.py::threshold[[]slow-value-p95<20]*"])


def test_a_skipped_participant_skips_its_thresholds(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BSDK_T_NONE", raising=False)
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("gated", required_env_vars=["BSDK_T_NONE"])],\n'
            'thresholds={"value": "p95 < 1"}'
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(skipped=2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bench-threshold", "p95 < 3"], '--bench-threshold expects "KEY: EXPR"*'),
        (["--bench-threshold", "value: p42 < 3"], "--bench-threshold value: *unknown statistic*"),
        (["--bench-warmup", "-1"], '--bench-warmup expects an integer >= 0 (got "-1")'),
    ],
)
def test_bad_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    assert_usage_error(pytester, args, message)


def test_a_score_threshold_without_scoring_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-threshold", "score: >= 1"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*--bench-threshold score: needs config.scoring*"])


def test_warmup_runs_first_and_is_never_scored(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=TWO_SPEEDS.replace("iterations=4,", "iterations=4, warmup=2,"))
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-v", "--bench-json", "out.json", "-k", "task"
    )
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(
        [
            "  Warm-up: 2 iteration(s) per participant first, never scored",
            "bench_x.py::warmup[[]fast-0] PASSED*",
            "bench_x.py::warmup[[]fast-1] PASSED*",
            "bench_x.py::task[[]fast-0] PASSED*",
        ]
    )
    run = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]
    # The measured records only: the warm-up's +75 never reaches a score.
    assert {p["participant"]: len(p["records"]) for p in run["participants"]} == {
        "fast": 4,
        "slow": 4,
    }
    assert {s["provider"]: s["metrics"][0]["median"] for s in run["scores"]} == {
        "fast": 5,
        "slow": 25,
    }
    warmup = {p["participant"]: p["records"] for p in run["warmup"]}
    assert [r["taskIndex"] for r in warmup["fast"]] == [-2, -1]
    assert all(r["warmup"] is True and r["data"]["value"] == 80 for r in warmup["fast"])
    (stored,) = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        assert [len(p.records) for p in store.participant_records(stored.run_id)] == [4, 4]
        assert [[r.task_index for r in p.records] for p in store.warmup_records(stored.run_id)] == [
            [-2, -1],
            [-2, -1],
        ]


def test_warmup_per_phase_and_the_option_overrides(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")],\n'
            'phases=[Phase("setup", 1), Phase("cold", 2), Phase("warm", 1)], warmup=3'
        )
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--collect-only", "-q", "--bench-warmup", "1"
    )
    # Each phase's warm-up right before it; the cold-named phase gets none.
    result.stdout.fnmatch_lines(
        [
            "bench_x.py::warmup[[]p1-setup-0]",
            "bench_x.py::task[[]p1-setup-0]",
            "bench_x.py::task[[]p1-cold-1]",
            "bench_x.py::task[[]p1-cold-2]",
            "bench_x.py::warmup[[]p1-warm-0]",
            "bench_x.py::task[[]p1-warm-3]",
        ]
    )
    assert "p1-cold-0]" not in result.stdout.str()


def test_warmup_never_reaches_the_platform(
    pytester: pytest.Pytester, loopback_platform: LoopbackPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback_platform
    use_platform(monkeypatch)
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=3, warmup=2'))
    result = pytester.runpytest_inprocess(*bench_args(server))
    assert result.ret == 0, result.stdout.str()
    (run,) = server.runs.values()
    assert server.participants[(run["id"], "p1")]["totalTasks"] == 3
    assert sorted(r["taskIndex"] for _, r in server.records(run["id"])) == [0, 1, 2]


@pytest.mark.slow
def test_markdown_summary_has_scores_thresholds_comparison_and_stays_small(
    pytester: pytest.Pytester,
) -> None:
    names = [f"provider-{i:02}" for i in range(20)]
    participants = ", ".join(f'Participant("{n}")' for n in names)
    pytester.makepyfile(
        bench_x=bench(
            f"participants=[{participants}], iterations=30,\nscoring={SCORING},\n"
            'thresholds={"value": "p95 < 25"}',
            """
            import random

            @define_task
            def task(participant, task_index, measure):
                rng = random.Random(task_index + 31 * int(participant.name[-2:]))
                measure(value=(10 + int(participant.name[-2:])) * rng.lognormvariate(0, 0.1))
            """,
        )
    )
    first = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    breaches = first.parseoutcomes()["failed"]
    assert 0 < breaches < 20
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-compare", "--bench-markdown", "summary.md"
    )
    result.stdout.fnmatch_lines([f"Summary written to {pytester.path / 'summary.md'}"])
    text = (pytester.path / "summary.md").read_text()
    assert len(text.encode()) < 64 * 1024
    assert text.startswith("# Benchmarks\n\n## Demo (`demo`)\n")
    header = "| # | participant | success | value med/p95/p99 | score | 95% interval | keeps rank |"
    assert header in text
    assert "| 1 | provider-00 | 100% |" in text
    assert f"**Thresholds**: ✅ {20 - breaches} passed, ❌ {breaches} failed" in text
    assert "| provider-19 | `value-p95<25` | ❌ | provider-19: value p95 = " in text
    assert "**Compared with** run " in text
    assert "| provider-00 | value | median | " in text
    assert "| unchanged |" in text
    assert "- `p99-few-samples` provider-00, provider-01, " in text
    assert "provider-19 (value): p99 comes from 30 sample(s)" in text
    # The verdict first: ranking, thresholds, the comparison's tally; then, folded, the
    # whole comparison, the latency and the warnings.
    order = [
        header,
        "**Thresholds**",
        "**Compared with** run ",
        "<details>",
        "| participant | metric | stat | baseline → current |",
        "| participant | success | latency med / p95 / p99 |",
        "**Warnings**",
        "</details>",
    ]
    assert [text.index(part) for part in order] == sorted(text.index(part) for part in order)
