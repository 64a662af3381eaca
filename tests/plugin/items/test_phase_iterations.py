"""``--bench-phase-iterations``: sizing phases from the command line (issue 33)."""

from __future__ import annotations

import json

import pytest

from helpers.sessions import bench

UNEVEN = bench(
    'participants=[Participant("a")], phases=[Phase("cold", 3), Phase("warm", 20)]',
    """
    @define_task
    def task(phase, measure):
        measure(value=1.0)
    """,
)

EVEN = bench(
    'participants=[Participant("a")], phases=[Phase("cold", 3), Phase("warm", 3)]',
    """
    @define_task
    def task(phase, measure):
        measure(value=1.0)
    """,
)


def _phases_run(doc: dict) -> dict[str, int]:
    (benchmark,) = doc["benchmarks"]
    (participant,) = benchmark["participants"]
    counts: dict[str, int] = {}
    for record in participant["records"]:
        phase = record["data"]["phase"]
        counts[phase] = counts.get(phase, 0) + 1
    return counts


def test_phases_sized_individually_take_their_sizes_from_the_option(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=UNEVEN)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-phase-iterations", "cold=2,warm=5",
        "--bench-json", "run.json",
    )  # fmt: skip
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(
        ["  Knobs: iterations=7, concurrency=1, staggerDelayMs=0, groupBy=participant, "
         "phases=cold=2,warm=5"]
    )  # fmt: skip
    doc = json.loads((pytester.path / "run.json").read_text())
    assert _phases_run(doc) == {"cold": 2, "warm": 5}


def test_a_phase_not_named_keeps_its_size_and_iterations_still_follow_upstream(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=UNEVEN)
    # Upstream's rule stands: --bench-iterations is ignored for phases sized individually.
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-iterations", "4",
        "--bench-phase-iterations", "cold=1", "--bench-json", "run.json",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["*--bench-iterations is ignored because this benchmark sizes*"])
    assert _phases_run(json.loads((pytester.path / "run.json").read_text())) == {
        "cold": 1,
        "warm": 20,
    }


def test_even_phases_take_iterations_then_the_named_sizes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=EVEN)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-iterations", "4",
        "--bench-phase-iterations", "cold=1", "--bench-json", "run.json",
    )  # fmt: skip
    result.assert_outcomes(passed=5)
    assert _phases_run(json.loads((pytester.path / "run.json").read_text())) == {
        "cold": 1,
        "warm": 4,
    }


def test_without_the_option_the_knobs_line_is_upstreams(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=UNEVEN)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.stdout.fnmatch_lines(
        ["  Knobs: iterations=23, concurrency=1, staggerDelayMs=0, groupBy=participant"]
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("hot=2", "--bench-phase-iterations hot: no collected benchmark has the phase 'hot' "
         "(phases of bench_x.py: cold, warm)"),
        ("cold=x", '--bench-phase-iterations cold expects an integer >= 1 (got "x")'),
        ("cold", '--bench-phase-iterations expects PHASE=N[[],PHASE=N...[]], e.g. *'),
        ("cold=1,cold=2", "--bench-phase-iterations names the phase 'cold' twice*"),
    ],
)  # fmt: skip
def test_bad_values_are_usage_errors(pytester: pytest.Pytester, value: str, message: str) -> None:
    pytester.makepyfile(bench_x=UNEVEN)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-phase-iterations", value
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
