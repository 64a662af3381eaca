"""Session end: store, JSON, scoring, on_complete, hooks, terminal summary, -v, --bench-check."""

from __future__ import annotations

import json

import pytest

from helpers.sessions import (
    SCORING,
    bench,
    read_json,
    stable_record,
    store_path,
    stored_records,
    stored_runs,
    without_cpu,
)
from pytest_benchsdk import ResultStore

# p1 always measures 20, p2 always 50: every stat equals that value, so with a lower-is-better
# ceiling of 100 the composite scores are exactly 80 and 50.
SCORED = bench(
    f'participants=[Participant("p1"), Participant("p2")], iterations=2,\nscoring={SCORING}',
    """
    @define_task
    def task(participant, measure, log):
        measure(value={"p1": 20, "p2": 50}[participant.name])
        log("done")
    """,
)


def _json(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess("--bench", "--bench-json", str(out), *args)
    return result, read_json(out)


def _composites(run_json: dict) -> dict[str, float]:
    return {row["provider"]: row["compositeScore"] for row in run_json["scores"]}


# -- store -----------------------------------------------------------------------------------


def test_store_keeps_run_records_scores_and_logs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=SCORED)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=4)
    path = store_path(pytester)
    (run,) = stored_runs(path)
    assert run.status == "passed"
    assert (run.benchmark_slug, run.benchmark_name, run.file) == ("demo", "Demo", "bench_x.py")
    assert run.participants == ("p1", "p2")
    assert run.dry_run is True
    assert run.record_count == 4
    assert run.finished_at is not None
    assert run.config_snapshot["participants"] == ["p1", "p2"]
    assert run.config_snapshot["iterations"] == 2
    assert run.config_snapshot["trigger"] == {"source": "manual"}
    records = stored_records(path, run.run_id)
    assert {
        p: [(r["taskIndex"], r["status"], without_cpu(r["data"])) for r in rs]
        for p, rs in records.items()
    } == {
        "p1": [(0, "success", {"value": 20}), (1, "success", {"value": 20})],
        "p2": [(0, "success", {"value": 50}), (1, "success", {"value": 50})],
    }
    with ResultStore(path) as store:
        scores = store.scores(run.run_id)
        logs = store.log_lines(run.run_id, "p2")
    assert [(s.provider, s.composite_score, s.success_rate) for s in scores] == [
        ("p1", 80, 1),
        ("p2", 50, 1),
    ]
    assert [line.split(" ", 1)[1] for line in logs] == [
        "[task 0] [info] done",
        "[task 1] [info] done",
    ]


def test_store_run_status_failed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(task="@define_task\ndef task(task_index):\n    assert task_index == 0\n")
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=2, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "failed"
    records = stored_records(store_path(pytester), run.run_id)
    assert [r["status"] for r in records["p1"]] == ["success", "error"]


def test_each_session_is_a_new_run_in_the_same_store(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    pytester.runpytest_inprocess("--bench", "--bench-dry-run").assert_outcomes(passed=4)
    pytester.runpytest_inprocess("--bench", "--bench-dry-run").assert_outcomes(passed=4)
    runs = stored_runs(store_path(pytester))
    assert len(runs) == 2
    assert runs[0].run_id != runs[1].run_id


def test_one_run_per_bench_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(), bench_y=bench('participants=[Participant("q")]', slug="other")
    )
    pytester.runpytest_inprocess("--bench", "--bench-dry-run").assert_outcomes(passed=5)
    runs = stored_runs(store_path(pytester))
    assert sorted((r.file, r.benchmark_slug, r.record_count) for r in runs) == [
        ("bench_x.py", "demo", 4),
        ("bench_y.py", "other", 1),
    ]


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_exitfirst_keeps_finished_records(pytester: pytest.Pytester, concurrency: str) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2")], iterations=3',
            """
            @define_task
            def task(participant, task_index, measure):
                measure(i=task_index)
                assert not (participant.name == "p1" and task_index == 1)
            """,
        )
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-x", f"--bench-concurrency={concurrency}"
    )
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1
    (run,) = stored_runs(store_path(pytester))
    records = stored_records(store_path(pytester), run.run_id)
    assert records.get("p2", []) == []
    by_index = {r["taskIndex"]: r["status"] for r in records["p1"]}
    assert by_index[0] == "success"
    assert by_index[1] == "error"
    # every reported iteration is stored; with concurrency > 1 the group's other iterations
    # that finished in the background are kept too
    assert run.record_count >= outcomes.get("passed", 0) + 1
    assert run.record_count == sum(len(rs) for rs in records.values())


def test_exitfirst_marks_the_stored_run_interrupted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(task="@define_task\ndef task(task_index):\n    assert task_index != 0\n")
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-x")
    result.assert_outcomes(failed=1)
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"


def test_interrupted_session_keeps_what_finished(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest

        seen = []

        def pytest_benchsdk_record(config, benchmark, participant, record):
            seen.append(record)
            if len(seen) == 2:
                pytest.exit("stopping after two records")
        """
    )
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=5'))
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    records = stored_records(store_path(pytester), run.run_id)
    assert [r["taskIndex"] for r in records["p1"]] == [0, 1]


# -- JSON ------------------------------------------------------------------------------------


def test_json_document(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BSDK_T_MISSING", raising=False)
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2"), '
            'Participant("gone", required_env_vars=["BSDK_T_MISSING"])], iterations=2,\n'
            f"scoring={SCORING}",
            "@define_task\ndef task(participant, measure):\n"
            '    measure(value={"p1": 20, "p2": 50}[participant.name])\n',
        )
    )
    result, doc = _json(pytester, "--bench-dry-run")
    result.assert_outcomes(passed=4, skipped=2)
    assert doc["version"] == 1
    assert doc["dryRun"] is True
    assert doc["environment"]["trigger"] == {"source": "manual"}
    (run,) = doc["benchmarks"]
    (stored,) = stored_runs(store_path(pytester))
    assert run["file"] == "bench_x.py"
    assert (run["benchmarkSlug"], run["benchmarkName"]) == ("demo", "Demo")
    assert run["localRunId"] == stored.run_id
    assert run["runId"] is None
    assert run["skipped"] == [{"name": "gone", "missing": ["BSDK_T_MISSING"]}]
    assert run["errors"] == []
    assert run["config"]["participants"] == ["p1", "p2"]
    assert run["config"]["scoring"]["metrics"][0]["key"] == "value"
    assert [p["participant"] for p in run["participants"]] == ["p1", "p2"]
    assert [without_cpu(r["data"]) for r in run["participants"][1]["records"]] == [
        {"value": 50}
    ] * 2
    assert _composites(run) == {"p1": 80, "p2": 50}
    p1 = run["scores"][0]
    assert p1["metrics"] == [{"name": "value", "unit": "ms", "median": 20, "p95": 20, "p99": 20}]
    assert p1["successRate"] == 1
    assert p1["skipped"] is False


def test_json_without_scoring_has_null_scores(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    _, doc = _json(pytester, "--bench-dry-run")
    assert doc["benchmarks"][0]["scores"] is None


# -- scoring and on_complete -----------------------------------------------------------------


def test_on_score_spec_is_used(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2")], iterations=2,\non_score=on_score',
            """
            @define_task
            def task(participant, measure):
                measure(rate={"p1": 30, "p2": 60}[participant.name])
            """,
            prelude="""
            from pytest_benchsdk import ScoringSpec

            def on_score(lower_is_better, higher_is_better):
                return ScoringSpec([higher_is_better(
                    "rate", ceiling=120, unit="ops",
                    weights={"median": 0.5, "p95": 0.3, "p99": 0.2})])
            """,
        )
    )
    result, doc = _json(pytester, "--bench-dry-run")
    result.assert_outcomes(passed=4)
    run = doc["benchmarks"][0]
    # higher is better: p2 (60/120) outranks p1 (30/120)
    assert _composites(run) == {"p1": 25, "p2": 50}
    result.stdout.fnmatch_lines(
        [
            "    #  participant  success  rate ↑ med/p95/p99  score  95% interval  keeps rank",
            "    1  p2           100%     60.0/60.0/60.0 ops  50.00  50.0–50.0     100%",
            "    2  p1           100%     30.0/30.0/30.0 ops  25.00  25.0–25.0     100%",
            "    (↑ higher is better: p95 and p99 are its best 5 % and 1 % of samples *",
        ]
    )


def test_bad_on_score_fails_the_run_and_skips_on_complete(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], on_score=on_score, on_complete=on_complete',
            prelude="""
            from pytest_benchsdk import ScoringSpec

            def on_score(lower_is_better, higher_is_better):
                return ScoringSpec([lower_is_better(
                    "value", ceiling=10, weights={"median": 0.5, "p95": 0.1, "p99": 0.1})])

            def on_complete(outcome):
                raise AssertionError("on_complete must not be called")
            """,
        )
    )
    result, doc = _json(pytester, "--bench-dry-run")
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (error,) = doc["benchmarks"][0]["errors"]
    assert error.startswith(
        "scoring failed: Scoring spec weights sum to 0.700, expected 1.0 (±0.01)."
    )
    result.stdout.fnmatch_lines(["  ERROR scoring failed: Scoring spec weights sum to 0.700*"])
    assert "on_complete must not be called" not in result.stdout.str()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_on_complete_receives_the_outcome(pytester: pytest.Pytester, kind: str) -> None:
    prefix = "async " if kind == "async" else ""
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2")], iterations=2, '
            "concurrency=1, on_complete=on_complete",
            prelude=f"""
            import json, pathlib

            {prefix}def on_complete(outcome):
                pathlib.Path("outcome.json").write_text(json.dumps({{
                    "run_id": outcome.run_id,
                    "dashboard_url": outcome.dashboard_url,
                    "participants": [
                        [pr.participant, [r.task_index for r in pr.records]]
                        for pr in outcome.participants
                    ],
                    "iterations": outcome.config.iterations,
                    "group_by": outcome.config.group_by,
                }}))
            """,
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=4)
    assert json.loads((pytester.path / "outcome.json").read_text()) == {
        "run_id": "no-ingest",
        "dashboard_url": "",
        "participants": [["p1", [0, 1]], ["p2", [0, 1]]],
        "iterations": 2,
        "group_by": "participant",
    }


def test_on_complete_failure_fails_the_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], on_complete=on_complete',
            prelude="""
            def on_complete(outcome):
                raise RuntimeError("webhook down")
            """,
        )
    )
    result, doc = _json(pytester, "--bench-dry-run")
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert doc["benchmarks"][0]["errors"] == ["on_complete failed: RuntimeError: webhook down"]
    result.stdout.fnmatch_lines(["  ERROR on_complete failed: RuntimeError: webhook down"])
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "failed"


def test_scoring_without_dry_run_is_local(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=SCORED)
    result, doc = _json(pytester)
    result.assert_outcomes(passed=4)
    assert doc["dryRun"] is False
    assert _composites(doc["benchmarks"][0]) == {"p1": 80, "p2": 50}


def test_failed_records_lower_the_success_rate(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            f'participants=[Participant("p1")], iterations=4, scoring={SCORING}',
            """
            @define_task
            def task(task_index, measure):
                measure(value=20)
                if task_index == 3:
                    raise TaskError("flaky", code="flaky")
            """,
        )
    )
    result, doc = _json(pytester, "--bench-dry-run")
    result.assert_outcomes(passed=3, failed=1)
    (row,) = doc["benchmarks"][0]["scores"]
    assert row["successRate"] == 0.75
    result.stdout.fnmatch_lines(
        ["  p1           3/4      *", "    1  p1           75%      20.0/20.0/20.0 ms  *"]
    )


# -- hooks -----------------------------------------------------------------------------------


def test_record_hook_sees_every_record(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import json, pathlib

        def pytest_benchsdk_record(config, benchmark, participant, record):
            with pathlib.Path("hook.jsonl").open("a") as f:
                data = {k: v for k, v in record.data.items() if k != "cpu_ms"}
                f.write(json.dumps([benchmark, participant, record.task_index,
                                    record.status, data]) + "\\n")
        """
    )
    pytester.makepyfile(bench_x=SCORED)
    pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-benchmark=renamed"
    ).assert_outcomes(passed=4)
    lines = [json.loads(line) for line in (pytester.path / "hook.jsonl").read_text().splitlines()]
    assert lines == [
        ["renamed", "p1", 0, "success", {"value": 20}],
        ["renamed", "p1", 1, "success", {"value": 20}],
        ["renamed", "p2", 0, "success", {"value": 50}],
        ["renamed", "p2", 1, "success", {"value": 50}],
    ]


def test_scores_hook_adjusts_stored_printed_and_json_scores(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import attrs

        def pytest_benchsdk_scores(config, benchmark, results):
            assert benchmark == "demo"
            results[:] = [attrs.evolve(r, composite_score=r.composite_score / 2)
                          for r in results]
        """
    )
    pytester.makepyfile(bench_x=SCORED)
    result, doc = _json(pytester, "--bench-dry-run")
    result.assert_outcomes(passed=4)
    assert _composites(doc["benchmarks"][0]) == {"p1": 40, "p2": 25}
    result.stdout.fnmatch_lines(["    1  p1 * 40.00", "    2  p2 * 25.00"])
    (run,) = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        assert [s.composite_score for s in store.scores(run.run_id)] == [40, 25]


def test_summary_hook_is_called_once_per_scored_benchmark(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import json, pathlib

        def pytest_benchsdk_summary(config, benchmark, summary):
            with pathlib.Path("summary.jsonl").open("a") as f:
                f.write(json.dumps([benchmark, sorted(summary),
                                    [r["provider"] for r in summary["results"]]]) + "\\n")
        """
    )
    pytester.makepyfile(bench_x=SCORED)
    _json(pytester, "--bench-dry-run")[0].assert_outcomes(passed=4)
    calls = (pytester.path / "summary.jsonl").read_text().splitlines()
    assert [json.loads(c) for c in calls] == [["demo", ["results", "run", "scoring"], ["p1", "p2"]]]


def test_hookspecs_are_documented(pytester: pytest.Pytester) -> None:
    from pytest_benchsdk import hookspecs

    for name in hookspecs.__all__:
        assert (getattr(hookspecs, name).__doc__ or "").strip(), name
    assert sorted(hookspecs.__all__) == [
        "pytest_benchsdk_record",
        "pytest_benchsdk_scores",
        "pytest_benchsdk_summary",
    ]


# -- terminal summary and -v -----------------------------------------------------------------


def test_terminal_summary(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BSDK_T_KEY", raising=False)
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p2"), Participant("p1"), '
            'Participant("gated", required_env_vars=["BSDK_T_KEY"])], iterations=2,\n'
            f"scoring={SCORING}",
            "@define_task\ndef task(participant, measure):\n"
            '    measure(value={"p1": 20, "p2": 50}[participant.name])\n',
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=4, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*= benchmarks =*",
            "Demo (demo) [bench_x.py]",
            "  Knobs: iterations=2, concurrency=1, staggerDelayMs=0, groupBy=participant",
            # the benchmark's own start and finish, and how the run ended
            "  Ran ????-??-?? ??:??:??–??:??:?? UTC (*); status: passed",
            "  participant  success  latency med/p95/p99",
            "  p2           2/2      */*/* ?s",
            "  p1           2/2      */*/* ?s",
            "  Scores:",
            "    #  participant  success  value med/p95/p99  score  95% interval  keeps rank",
            # ranked by composite score, best first; every value identical: a zero-width
            # interval, and each keeps its rank in every resample
            "    1  p1           100%     20.0/20.0/20.0 ms  80.00  80.0–80.0     100%",
            "    2  p2           100%     50.0/50.0/50.0 ms  50.00  50.0–50.0     100%",
            # run-hygiene warnings: one per code and participant (those saying the same
            # share the line), with the metrics they are about, the finding in one line; why
            # it matters and what to do with -v
            "  warning [[]p99-few-samples] p2, p1 (value): p99 comes from 2 sample(s)",
            "  (why each warning matters and what to do: -v or --bench-warnings=full, or "
            "pytest-benchsdk show -v)",
            "  Skipped gated: missing BSDK_T_KEY",
            "",
            f"Results stored in {store_path(pytester)}",
        ]
    )


def test_summary_lines_with_group_by_rows(pytester: pytest.Pytester) -> None:
    scoring = (
        '{"group_by": "region", "metrics": [{"key": "value", "ceiling": 100, '
        '"weights": {"median": 1, "p95": 0, "p99": 0}}]}'
    )
    pytester.makepyfile(
        bench_x=bench(
            f'participants=[Participant("p1")], iterations=2, scoring={scoring}',
            """
            @define_task
            def task(task_index, measure):
                measure(value=10 if task_index == 0 else 30,
                        region="eu" if task_index == 0 else "us")
            """,
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["    1  p1 *", "         region=eu * 90.00", "         region=us * 70.00"]
    )


def test_verbose_shows_one_figure_per_iteration(pytester: pytest.Pytester) -> None:
    # One figure, never the record's JSON (issue 47: a benchmarked test's thousands of rounds
    # made each PASSED line 11,517 characters long), at any -v.
    pytester.makepyfile(bench_x=SCORED)
    for verbose in ("-v", "-vvv"):
        result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", verbose)
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines(
            [
                "bench_x.py::task?p1-0? PASSED latency * ?s *",
                "bench_x.py::task?p1-1? PASSED latency * ?s *",
                "bench_x.py::task?p2-0? PASSED latency * ?s *",
                "bench_x.py::task?p2-1? PASSED latency * ?s *",
            ]
        )
        assert '{"value"' not in result.stdout.str()


def test_verbose_shows_a_benchmarked_tests_time_per_call(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_x="""
        def test_sum(benchmark):
            benchmark(sum, range(100))
        """
    )
    result = pytester.runpytest_inprocess("--bench", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_x.py::test_sum PASSED time_ms median * ?s *"])
    assert '"time_ms":[' not in result.stdout.str()


def test_not_verbose_shows_dots(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=SCORED)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.stdout.fnmatch_lines(["bench_x.py .... *"])
    assert '{"value":20}' not in result.stdout.str()


# -- --bench-check ---------------------------------------------------------------------------

CHECK_TASK = """
import pathlib

@define_task
def task():
    pathlib.Path("ran").write_text("yes")
"""


def test_check_validates_without_running(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BSDK_T_KEY", raising=False)
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2"), '
            'Participant("gated", required_env_vars=["BSDK_T_KEY"])],\n'
            f"scoring={SCORING}",
            CHECK_TASK,
        )
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-check", "--bench-dry-run", "--bench-provider=p2,gated"
    )
    assert result.ret == pytest.ExitCode.OK
    assert not (pytester.path / "ran").exists()
    assert not store_path(pytester).exists()
    out = result.stdout.str()
    start = out.index('{\n  "file"')
    report = json.loads(out[start : out.index("\n}", start) + 2])
    assert report == {
        "file": "bench_x.py",
        "benchmarkSlug": "demo",
        "apiOk": None,  # a dry run checks no platform
        "envOk": True,
        "participants": {
            "requested": ["p2", "gated"],
            "available": ["p2"],
            "skipped": [{"name": "gated", "missing": ["BSDK_T_KEY"]}],
        },
        "scoringOk": True,
    }
    assert "Benchmark check failed" not in out


def test_check_omits_scoring_ok_without_scoring(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(task=CHECK_TASK))
    result = pytester.runpytest_inprocess("--bench", "--bench-check", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.OK
    assert '"scoringOk"' not in result.stdout.str()
    assert not (pytester.path / "ran").exists()


def test_check_fails_without_available_participants(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("g", required_env_vars=["BSDK_T_NONE"])]', CHECK_TASK
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-check", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ['    "available": [],', "Benchmark check failed. See warnings above for details."]
    )
    assert not (pytester.path / "ran").exists()


def test_check_fails_on_bad_on_score(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], on_score=on_score',
            CHECK_TASK,
            prelude="""
            from pytest_benchsdk import ScoringSpec

            def on_score(lower_is_better, higher_is_better):
                return ScoringSpec([lower_is_better(
                    "value", ceiling=10, weights={"median": 0.5, "p95": 0.1, "p99": 0.1})])
            """,
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-check", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "[[]benchsdk[]] Scoring validation failed: Scoring spec weights sum to 0.700, "
            "expected 1.0 (±0.01).*",
            '  "scoringOk": false',
            "Benchmark check failed. See warnings above for details.",
        ]
    )


def test_check_reports_each_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(task=CHECK_TASK),
        bench_y=bench('participants=[Participant("q")]', CHECK_TASK, slug="other"),
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-check", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(['  "file": "bench_x.py",', '  "file": "bench_y.py",'])


@pytest.mark.slow
def test_check_stays_in_one_process_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(task=CHECK_TASK))
    result = pytester.runpytest_inprocess(
        "-p", "xdist", "-n", "2", "--bench", "--bench-check", "--bench-dry-run"
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(['  "file": "bench_x.py",', '  "apiOk": null,'])
    result.stdout.no_fnmatch_line("*workers*")


# -- records read back from the store --------------------------------------------------------


def test_scores_on_complete_and_json_read_the_stored_records(pytester: pytest.Pytester) -> None:
    # The controller keeps only a tally per participant while the run goes on; at the end
    # scoring, on_complete and --bench-json read the records back from the store. They see
    # the same records as a run without a store (kept in memory), and exactly what is stored.
    pytester.makepyfile(
        bench_x=bench(
            f"""
            participants=[Participant("p1"), Participant("p2")],
            phases=[Phase("cold", 2), Phase("warm", 3)],
            scoring={SCORING}, on_complete=on_complete
            """,
            """
            @define_task
            def task(participant, task_index, measure, log):
                log(f"iteration {task_index}")
                if participant.name == "p2" and task_index == 3:
                    raise TaskError("boom", code="bad")
                measure(value=10 + task_index)
            """,
            prelude="""
            import json, pathlib

            def on_complete(outcome):
                seen = {pr.participant: [r.to_wire() for r in pr.records]
                        for pr in outcome.participants}
                name = "stored" if outcome.store_run_id else "memory"
                pathlib.Path(f"on_complete_{name}.json").write_text(json.dumps(seen))
            """,
        )
    )
    stored_result, stored = _json(pytester, "--bench-dry-run")
    stored_result.assert_outcomes(passed=9, failed=1)
    memory_result, memory = _json(pytester, "--bench-dry-run", "--bench-no-store")
    memory_result.assert_outcomes(passed=9, failed=1)

    def stable(doc: dict) -> list:
        return [
            {
                "participant": p["participant"],
                "records": [stable_record(r) for r in p["records"]],
            }
            for p in doc["benchmarks"][0]["participants"]
        ]

    assert stable(stored) == stable(memory)
    assert [len(p["records"]) for p in stable(stored)] == [5, 5]
    assert _composites(stored["benchmarks"][0]) == _composites(memory["benchmarks"][0])
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "failed"
    kept = stored_records(store_path(pytester), run.run_id)
    assert read_json(pytester.path / "on_complete_stored.json") == kept
    assert {p["participant"]: p["records"] for p in stored["benchmarks"][0]["participants"]} == kept
    seen_in_memory = read_json(pytester.path / "on_complete_memory.json")
    assert {k: [stable_record(r) for r in v] for k, v in seen_in_memory.items()} == {
        k: [stable_record(r) for r in v] for k, v in kept.items()
    }
    # The summary table (from the tallies) says the same in both runs.
    for result in (stored_result, memory_result):
        result.stdout.fnmatch_lines(
            [
                "  participant *success  latency med/p95/p99",
                "  p1   *5/5      *",
                "    p1 · cold *2/2      *",
                "    p1 · warm *3/3      *",
                "  p2   *4/5      *",
                "    p2 · cold *2/2      *",
                "    p2 · warm *2/3      *",
                "  Scores:",
                "    #   participant *success  value med/p95/p99  score  95% interval*",
                "    1   p1   *100%     12.0/14.0/14.0 ms  87.20  *",
                "          p1 · cold *100%     10.5/11.0/11.0 ms",
                "          p1 · warm *100%     13.0/14.0/14.0 ms",
                "    2=  p2   *80%      11.5/14.0/14.0 ms  70.00  *",
            ]
        )


def test_on_complete_sees_a_nan_measure_the_store_keeps_as_null(pytester: pytest.Pytester) -> None:
    # JSON has no NaN: the store (and --bench-json, and the platform) hold null, while
    # on_complete gets the record as the task measured it.
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=2, on_complete=on_complete',
            """
            @define_task
            def task(task_index, measure):
                measure(value=float("nan") if task_index == 1 else 5.0)
            """,
            prelude="""
            import math, pathlib

            def on_complete(outcome):
                values = [r.data["value"] for r in outcome.participants[0].records]
                pathlib.Path("seen.txt").write_text(repr(values))
            """,
        )
    )
    result, doc = _json(pytester, "--bench-dry-run")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "seen.txt").read_text() == "[5.0, nan]"
    records = doc["benchmarks"][0]["participants"][0]["records"]
    assert [r["data"]["value"] for r in records] == [5.0, None]
    (run,) = stored_runs(store_path(pytester))
    stored = stored_records(store_path(pytester), run.run_id)["p1"]
    assert [r["data"]["value"] for r in stored] == [5.0, None]
