"""Results as a reader sees them: per-phase rows, junitxml, ``store_run_id``, ``-v`` data,
and the summary's small things (nothing ran, interrupted runs, long or multi-line names)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import attrs
import pytest

from helpers.processes import sigint_as_in_a_terminal
from helpers.sessions import (
    bench,
    read_json,
    store_path,
    stored_records,
    stored_runs,
)
from pytest_benchsdk import BenchmarkRunOutcome, ParticipantRecords, score
from pytest_benchsdk.records import TaskRecord


def _section(result: pytest.RunResult) -> list[str]:
    """The lines of the ``benchmarks`` summary section."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if re.match(r"=+ benchmarks =+$", line))
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(r"=+ .* =+$", lines[i])), len(lines)
    )
    return lines[start + 1 : end]


def _cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


# -- 3: per-phase rows -----------------------------------------------------------------------

PHASED = bench(
    'participants=[Participant("fast"), Participant("slow")],\n'
    'phases=[Phase("cold", 2), Phase("warm", 3)],\n'
    'scoring={"metrics": [{"key": "value", "unit": "ms", "ceiling": 100, '
    '"weights": {"median": 0.6, "p95": 0.25, "p99": 0.15}}]}',
    """
    @define_task
    def task(participant, phase, measure):
        base = {"fast": 10, "slow": 30}[participant.name]
        measure(value=base * (4 if phase == "cold" else 1))
    """,
)


def test_phases_get_their_own_rows_under_each_participant(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=PHASED)
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-json", str(out), "--bench-score-resamples", "0"
    )
    result.assert_outcomes(passed=10)
    section = _section(result)
    # Latency table: the participant's row, then one row per phase with its own count.
    start = section.index(next(line for line in section if "latency med/p95/p99" in line))
    latency = [_cells(line) for line in section[start + 1 : start + 7]]
    assert [row[:2] for row in latency] == [
        ["fast", "5/5"],
        ["fast · cold", "2/2"],
        ["fast · warm", "3/3"],
        ["slow", "5/5"],
        ["slow · cold", "2/2"],
        ["slow · warm", "3/3"],
    ]
    assert section[start + 2].startswith("    fast · cold")
    # Scores: upstream's ranked rows unchanged; the phase rows carry the stats of that
    # phase's records alone and no score.
    scores_at = section.index("  Scores:")
    rows = [_cells(line) for line in section[scores_at + 2 : scores_at + 8]]
    run_json = read_json(out)["benchmarks"][0]
    composites = {r["provider"]: r["compositeScore"] for r in run_json["scores"]}
    assert rows == [
        ["1", "fast", "100%", "10.0/40.0/40.0 ms", f"{composites['fast']:.2f}"],
        ["fast · cold", "100%", "40.0/40.0/40.0 ms"],
        ["fast · warm", "100%", "10.0/10.0/10.0 ms"],
        ["2", "slow", "100%", "30.0/120/120 ms", f"{composites['slow']:.2f}"],
        ["slow · cold", "100%", "120/120/120 ms"],
        ["slow · warm", "100%", "30.0/30.0/30.0 ms"],
    ]
    # The composites are upstream's: score() on the same records gives the same numbers.
    weights = {"median": 0.6, "p95": 0.25, "p99": 0.15}
    outcome_rows = score(
        _outcome(run_json["participants"]),
        {"metrics": [{"name": "value", "ceiling": 100, "weights": weights}]},
    )
    assert {r.provider: r.composite_score for r in outcome_rows} == composites


@attrs.frozen
class _Outcome:
    """What ``score()`` reads of an outcome."""

    participants: tuple[ParticipantRecords, ...]


def _outcome(participants: list[dict[str, Any]]) -> _Outcome:
    return _Outcome(
        tuple(
            ParticipantRecords(
                p["participant"], tuple(TaskRecord.from_wire(r) for r in p["records"])
            )
            for p in participants
        )
    )


def test_no_phase_rows_without_phases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=4)
    assert not any("phase=" in line for line in _section(result))


# -- 4: junitxml -----------------------------------------------------------------------------

JUNIT = bench(
    'participants=[Participant("p1")], phases=[Phase("cold", 1), Phase("warm", 3)],\nconcurrency=4',
    """
    import time

    @define_task
    def task(task_index):
        time.sleep(0.05 * (task_index + 1))
        if task_index == 3:
            raise TaskError("quota exceeded", code="QUOTA")
    """,
)


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "xdist"])
def test_junitxml_testcases_carry_the_iteration(pytester: pytest.Pytester, xdist: bool) -> None:
    pytester.makepyfile(bench_x=JUNIT)
    # Every report's duration, as pytest (and junitxml) sees it, under xdist too (the
    # controller gets the workers' reports).
    pytester.makeconftest(
        """
        import json

        def pytest_runtest_logreport(report):
            with open("durations.jsonl", "a") as out:
                out.write(json.dumps([report.nodeid, report.when, report.duration]) + "\\n")
        """
    )
    xml = pytester.path / "junit.xml"
    args = ["--bench", "--bench-dry-run", f"--junitxml={xml}", "-p", "no:cacheprovider"]
    if xdist:
        result = pytester.runpytest_inprocess(*args, "-n", "2", "--dist", "loadgroup")
    else:
        result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=3, failed=1)
    durations: dict[str, dict[str, float]] = {}
    for line in (pytester.path / "durations.jsonl").read_text().splitlines():
        nodeid, when, duration = json.loads(line)
        durations.setdefault(nodeid, {})[when] = duration
    cases = ET.parse(xml).getroot().findall(".//testcase")
    assert len(cases) == 4
    by_index: dict[int, tuple[dict[str, str], float]] = {}
    for case in cases:
        index = int(re.search(r"-(\d+)\]", case.attrib["name"]).group(1))  # type: ignore[union-attr]
        props = {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}
        by_index[index] = (props, float(case.attrib["time"]))
    for index, (props, time_s) in by_index.items():
        assert props["participant"] == "p1"
        assert props["phase"] == ("cold" if index == 0 else "warm")
        latency_s = float(props["latency_ms"]) / 1000
        assert latency_s >= 0.05 * (index + 1)
        # The testcase's time is the iteration's own latency plus setup and teardown, not how
        # long its item waited for an iteration that ran alongside the others: the call
        # report's duration is the latency itself.
        reports = durations[f"bench_x.py::task[p1-{props['phase']}-{index}]"]
        assert reports["call"] == pytest.approx(latency_s, abs=1e-6)
        assert time_s == pytest.approx(sum(reports.values()), abs=0.002)
    assert by_index[3][0]["status"] == "error"
    assert by_index[3][0]["errorCode"] == "QUOTA"
    assert by_index[0][0]["status"] == "success"
    assert "errorCode" not in by_index[0][0]
    assert by_index[3][1] >= 0.19


def test_durations_lists_the_iterations_latencies(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=JUNIT)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--durations=0", "--durations-min=0", "--bench-json=run.json"
    )
    doc = json.loads((pytester.path / "run.json").read_text())
    (records,) = [p["records"] for b in doc["benchmarks"] for p in b["participants"]]
    latency = {r["taskIndex"]: r["latencyMs"] / 1000 for r in records}
    listed = {
        int(m.group(2)): float(m.group(1))
        for line in result.stdout.lines
        if (m := re.match(r"(\d+\.\d+)s call +bench_x\.py::task\[p1-(?:cold|warm)-(\d)\]", line))
    }
    # Every iteration is listed with its own latency (pytest prints two decimals), not with
    # how long its item waited for the iterations that ran alongside it.
    assert sorted(listed) == [0, 1, 2, 3]
    for index, seconds in listed.items():
        assert seconds == pytest.approx(latency[index], abs=0.006), (index, seconds)


# -- 5: on_complete finds the stored run -----------------------------------------------------

ON_COMPLETE = bench(
    'participants=[Participant("p1")], iterations=2, on_complete=on_complete',
    prelude="""
    import json, pathlib

    def on_complete(outcome):
        pathlib.Path("outcome.json").write_text(
            json.dumps({"run_id": outcome.run_id, "store_run_id": outcome.store_run_id})
        )
    """,
)


def test_on_complete_gets_the_store_run_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=ON_COMPLETE)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=2)
    seen = json.loads((pytester.path / "outcome.json").read_text())
    (run,) = stored_runs(store_path(pytester))
    assert seen == {"run_id": "no-ingest", "store_run_id": run.run_id}
    assert [r["taskIndex"] for r in stored_records(store_path(pytester), run.run_id)["p1"]] == [
        0,
        1,
    ]


@pytest.mark.parametrize("mode", [["--bench-dry-run"], []], ids=["dry-run", "local-only"])
def test_store_run_id_is_none_without_a_store(pytester: pytest.Pytester, mode: list[str]) -> None:
    pytester.makepyfile(bench_x=ON_COMPLETE)
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", *mode)
    result.assert_outcomes(passed=2)
    seen = json.loads((pytester.path / "outcome.json").read_text())
    assert seen == {"run_id": "no-ingest", "store_run_id": None}


def test_benchmark_run_outcome_stays_backward_compatible() -> None:
    outcome = BenchmarkRunOutcome("r", "", (), None)  # type: ignore[arg-type]
    assert outcome.store_run_id is None
    assert BenchmarkRunOutcome("r", "", (), None, store_run_id="s").store_run_id == "s"  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        BenchmarkRunOutcome("r", "", (), None, "s")  # type: ignore[arg-type,misc]


# -- 8: readable -v lines -----------------------------------------------------------------------


def test_verbose_line_shows_one_figure_and_the_store_keeps_full_precision(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=1',
            """
            @define_task
            def task(measure):
                measure(hash_ms=0.48585299998649134, big=1234.5678, mid=22.8449,
                        count=7, samples=[1.23456, 0.000123456], label="a\\nb")
            """,
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-v")
    result.assert_outcomes(passed=1)
    line = next(line for line in result.stdout.lines if " PASSED " in line)
    detail = line.split(" PASSED ", 1)[1].rsplit("[", 1)[0].strip()
    # One figure a reader can take in at a glance; the measured data lives in the summary.
    assert re.fullmatch(r"latency [0-9.]+ (ns|µs|ms|s)", detail), detail
    assert "hash_ms" not in line
    assert "{" not in line
    assert re.search(r"hash_ms\s+486/486/486 µs", result.stdout.str())
    (run,) = stored_runs(store_path(pytester))
    (record,) = stored_records(store_path(pytester), run.run_id)["p1"]
    assert record["data"]["hash_ms"] == 0.48585299998649134
    assert record["data"]["samples"] == [1.23456, 0.000123456]


# -- 11: the summary's small things ------------------------------------------------------------


def test_all_skipped_prints_no_empty_tables(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BSDK_T_NONE", raising=False)
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("g", required_env_vars=["BSDK_T_NONE"])],\n'
            'scoring={"metrics": [{"key": "value", "ceiling": 100, '
            '"weights": {"median": 1, "p95": 0, "p99": 0}}]}'
        ),
        bench_y=bench(
            'participants=[Participant("p1")], iterations=2,\n'
            'scoring={"metrics": [{"key": "value", "ceiling": 100, '
            '"weights": {"median": 1, "p95": 0, "p99": 0}}]}',
            "import pytest\n@define_task\ndef task():\n    pytest.skip('not today')\n",
            slug="y",
        ),
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.OK
    section = _section(result)
    assert not any("Scores:" in line or "latency" in line for line in section), section
    assert section.count("  No participant ran.") == 2
    assert "  Skipped g: missing BSDK_T_NONE" in section


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stop", "args", "done", "a_row"),
    [
        ("assert task_index != 2", ["-x"], 3, ["3/5", "2/3"]),
        # A real Ctrl-C while iteration 2 runs: it leaves no record.
        (
            "if task_index == 2:\n"
            "        import os, signal, time\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "        time.sleep(30)",
            [],
            2,
            ["2/5", "2/2"],
        ),
    ],
    ids=["-x", "ctrl-c"],
)
def test_an_interrupted_session_shows_done_of_planned(
    pytester: pytest.Pytester, stop: str, args: list[str], done: int, a_row: list[str]
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("a"), Participant("b")], iterations=5, concurrency=1',
            f"@define_task\ndef task(task_index):\n    {stop}\n",
        )
    )
    # A subprocess: in process, the KeyboardInterrupt would reach this session too.
    with sigint_as_in_a_terminal():
        result = pytester.runpytest_subprocess(
            "--bench", "--bench-dry-run", "-p", "no:cacheprovider", *args
        )
    section = _section(result)
    status = next(line for line in section if "status: " in line)
    assert status.endswith(f"status: interrupted ({done} of 10 iterations ran)")
    header = next(line for line in section if "latency med/p95/p99" in line)
    assert _cells(header)[:3] == ["participant", "ran", "success"]
    rows = {_cells(line)[0]: _cells(line)[1:3] for line in section if line.startswith("  a ")}
    rows.update({_cells(line)[0]: _cells(line)[1:3] for line in section if line.startswith("  b ")})
    assert rows == {"a": a_row, "b": ["0/5", "0/0"]}


def test_a_complete_run_has_no_ran_column(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    section = _section(result)
    header = next(line for line in section if "latency med/p95/p99" in line)
    assert "ran" not in _cells(header)
    assert not any("interrupted" in line for line in section)


def test_long_and_multiline_names_stay_on_one_short_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BSDK_T_NONE", raising=False)
    long_name = "x" * 5000
    pytester.makepyfile(
        bench_x=bench(
            f'participants=[Participant({long_name!r}), Participant("multi\\nline"),\n'
            'Participant("gone\\nname", required_env_vars=["BSDK_T_NONE"])], iterations=1,\n'
            'scoring={"metrics": [{"key": "value", "ceiling": 100, '
            '"weights": {"median": 1, "p95": 0, "p99": 0}}]}'
        )
    )
    # Without the score intervals: the table's width here is about the names.
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-score-resamples", "0"
    )
    result.assert_outcomes(passed=2, skipped=1)
    section = _section(result)
    assert max(len(line) for line in section if line.startswith("  ")) < 100, section
    # Cut in the middle: its start and its end (where a parametrized test's id is) kept.
    cut = "x" * 15 + "\u2026" + "x" * 24
    # The latency table and the metrics table (cpu_ms).
    assert sum(1 for line in section if _cells(line)[:1] == [cut]) == 2
    assert sum(1 for line in section if _cells(line)[1:2] == [cut]) == 1  # scores
    assert sum(1 for line in section if _cells(line)[:1] == ["multi\\nline"]) == 2
    assert sum(1 for line in section if _cells(line)[1:2] == ["multi\\nline"]) == 1
    assert "  Skipped gone\\nname: missing BSDK_T_NONE" in section
    assert not any(line.startswith(("line", "name")) for line in result.stdout.lines)


def test_newline_in_a_participant_name_keeps_v_lines_whole(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench('participants=[Participant("a\\nb")], iterations=1'))
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-v", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([r"bench_x.py::task[[]a\nb-0[]] PASSED*"])
    assert not any(line.startswith("b-0]") for line in result.stdout.lines)
