"""A calibrated step's per-call time is a metric named after the step (issue 46, part A), as
a user's session shows it: in the record and the store, judged by default when the benchmark
scores nothing and its iterations are calibrated steps only, nameable in scoring, thresholds
and ``--bench-compare-on``, and exported instead of the loops' latency.

The figures are the machine's (calibrated loops of a tiny function); the tests check where
they go, never how large they are, except for a change of 30× work, which no load hides.
"""

from __future__ import annotations

import json
import re

import pytest

from helpers.sessions import bench, read_json, store_path, stored_records, stored_runs

#: Three slugify implementations, each timed per call in a calibrated loop; ``SLOW`` (an
#: environment variable) makes ``regex`` do 30 times its work.
SLUGIFY = bench(
    """
    participants=[Participant("regex"), Participant("split"), Participant("translate")],
    iterations=4
    """,
    """
    import os
    import re
    import string

    TEXT = "Hello World, this is a Title!"
    REPEAT = 30 if os.environ.get("SLOW") else 1
    TABLE = str.maketrans({c: "-" for c in string.punctuation + " "})


    def regex():
        for _ in range(REPEAT):
            out = re.sub(r"[^a-z0-9]+", "-", TEXT.lower()).strip("-")
        return out


    def split():
        return "-".join("".join(c if c.isalnum() else " " for c in TEXT.lower()).split())


    def translate():
        return "-".join(p for p in TEXT.lower().translate(TABLE).split("-") if p)


    FNS = {"regex": regex, "split": split, "translate": translate}


    @define_task
    def task(participant, step):
        step("slugify4", FNS[participant.name], calls="auto", min_time_ms=0.2)
    """,
    slug="slugify",
    name="Slugify",
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:randomly", *args)


def _records(document: dict[str, object], participant: str) -> list[dict[str, object]]:
    benchmark = document["benchmarks"][0]  # type: ignore[index]
    for entry in benchmark["participants"]:
        if entry["participant"] == participant:
            return list(entry["records"])
    raise AssertionError(f"no records of {participant}")


def test_the_per_call_time_is_in_the_record_and_the_store(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_slug=SLUGIFY)
    result = _run(pytester, "--bench-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    document = read_json(pytester.path / "out.json")
    for record in _records(document, "regex"):
        (step,) = record["steps"]  # type: ignore[misc]
        # The step's per-call time (its latency), under the step's name, in milliseconds.
        assert record["data"]["slugify4"] == step["latencyMs"]  # type: ignore[index]
        assert 0 < step["latencyMs"] < 1
    (run,) = stored_runs(store_path(pytester))
    stored = stored_records(store_path(pytester), run.run_id)
    assert all(isinstance(r["data"]["slugify4"], float) for r in stored["split"])
    # The summary reads it as a time per call, in the unit that fits.
    assert re.search(r"regex\s+slugify4\s+[\d.]+/[\d.]+/[\d.]+ (ns|µs)\s+4", result.stdout.str())


def test_a_step_timed_twice_gives_a_list_and_a_measure_of_its_name_wins(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_twice=bench(
            'participants=[Participant("p1"), Participant("own")], iterations=2',
            """
            @define_task
            def task(participant, step, measure):
                step("join", lambda: ",".join("abc"), calls=100)
                step("join", lambda: ",".join("abc"), calls=100)
                if participant.name == "own":
                    measure(join=42.0)
            """,
        )
    )
    result = _run(pytester, "--bench-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    document = read_json(pytester.path / "out.json")
    for record in _records(document, "p1"):
        first, second = record["steps"]  # type: ignore[misc]
        assert record["data"]["join"] == [first["latencyMs"], second["latencyMs"]]  # type: ignore[index]
    assert all(r["data"]["join"] == 42.0 for r in _records(document, "own"))  # type: ignore[index]
    # Both timings are samples: 2 iterations × 2.
    # One unit for the column (own's 42 ms sets it).
    assert re.search(r"p1\s+join\s+\S+ (ns|µs|ms)\s+4", result.stdout.str()), result.stdout.str()


def test_a_benchmark_of_calibrated_steps_is_judged_per_call_by_default(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_slug=SLUGIFY)
    result = _run(pytester, "--bench-json", "out.json", "--bench-columns=min,median")
    assert result.ret == 0, result.stdout.str()
    text = " ".join(result.stdout.str().split())
    # The relative summary orders the participants on the per-call figure, not the loops.
    assert re.search(r"on slugify4 median", text), text
    assert "on latency median" not in text
    assert "Columns (slugify4 per participant)" in text
    (run,) = read_json(pytester.path / "out.json")["benchmarks"]
    assert run["result"]["perCall"] == ["slugify4"]
    assert run["result"]["relative"]["metric"] == "slugify4"


def test_scoring_ranks_on_the_per_call_metric(pytester: pytest.Pytester) -> None:
    scored = SLUGIFY.replace(
        "iterations=4,",
        'iterations=4, scoring={"metrics": [{"key": "slugify4", "unit": "ms", '
        '"ceiling": 1, "weights": {"median": 1, "p95": 0, "p99": 0}}]},',
    )
    pytester.makepyfile(bench_slug=scored)
    result = _run(pytester, "--bench-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    (run,) = read_json(pytester.path / "out.json")["benchmarks"]
    ranking = run["result"]["scores"]["ranking"]
    assert [entry["rank"] for entry in ranking] == [1, 2, 3]
    for row in run["scores"]:
        (metric,) = row["metrics"]
        assert metric["name"] == "slugify4"
        assert 0 < metric["median"] < 1  # a time per call, not a loop's length
        assert 0 < row["compositeScore"] <= 100


def test_compare_judges_the_per_call_figure_and_names_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_slug=SLUGIFY)
    assert _run(pytester, "--bench-save", "main").ret == 0
    # The default rows are the per-call metric's, judged; the latency has none.
    pytester.makepyfile(bench_slug=SLUGIFY.replace('os.environ.get("SLOW")', "True"))
    result = _run(pytester, "--bench-compare=main", "--bench-compare-fail", "--bench-json", "a")
    assert result.ret == 1, result.stdout.str()
    (run,) = read_json(pytester.path / "a")["benchmarks"]
    rows = run["comparison"]["rows"]
    assert {row["metric"] for row in rows} == {"slugify4"}
    regex = next(r for r in rows if r["participant"] == "regex" and r["statistic"] == "median")
    assert regex["verdict"] == "regressed", regex
    result.stdout.fnmatch_lines(["*regressed (--bench-compare-fail): slugify: regex slugify4 *"])
    # --bench-compare-on names it (it was "no participant measured slugify4").
    pytester.makepyfile(bench_slug=SLUGIFY)
    result = _run(pytester, "--bench-compare=main", "--bench-compare-on=slugify4")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*Judged (--bench-compare-on): slugify4*"])


def test_compare_fail_rules_judge_the_per_call_figure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_slug=SLUGIFY)
    assert _run(pytester, "--bench-save", "main").ret == 0
    result = _run(pytester, "--bench-compare=main", "--bench-compare-fail=median:1000%")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*regex (slugify4) median:1000%: * ok*"])


def test_a_threshold_on_the_per_call_metric(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_slug=SLUGIFY)
    # Milliseconds per call: 1 ms is far above any slugify call, 1 ns below every one.
    result = _run(pytester, "--bench-threshold=slugify4: median < 1")
    result.assert_outcomes(passed=15)
    result = _run(pytester, "--bench-threshold=slugify4: median < 0.000001")
    result.assert_outcomes(passed=12, failed=3)
    result.stdout.fnmatch_lines(["*FAILED regex: slugify4 median = * breached*"])


def test_the_exports_name_the_per_call_metric(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_slug=SLUGIFY)
    result = _run(pytester, "--bench-export", "gab:gab.json", "--bench-export", "bmf:bmf.json")
    assert result.ret == 0, result.stdout.str()
    names = [entry["name"] for entry in json.loads((pytester.path / "gab.json").read_text())]
    assert "slugify/regex/slugify4 median" in names
    # The loops' length (latency, CPU time) is no figure of this benchmark.
    assert not [n for n in names if "latency_ms" in n or "cpu_ms" in n], names
    bmf = json.loads((pytester.path / "bmf.json").read_text())
    assert set(bmf["slugify/translate"]) == {"slugify4 median", "slugify4 p95", "slugify4 p99"}
