"""The ``benchmark`` fixture chooses its iterations and rounds as pytest-benchmark does with the
same settings (issue 47, side by side): the same file under the real pytest-benchmark (in the
test extra) and here, on a clock the measured functions drive (``--benchmark-timer``, which
both read), gives the same rounds of the same calls, so the same per-call figures.

The case that set them apart: a function whose first call is slow (cattrs' converters generate
their code on first use). pytest-benchmark times that first call as its calibration's first
round, so it takes one call a round and ``ceil(max_time / first call)`` rounds; calibrated warm,
this fixture took ten calls a round and ten times the rounds (a lower minimum, and a session
three and a half times as long on cattrs' suite run without its warm-up options).
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

#: A clock the functions advance (fake seconds), read by both plugins as their timer.
FAKECLOCK = textwrap.dedent(
    """
    now = 0.0


    def timer():
        global now
        now += 1e-9
        return now


    def function(first, then):
        calls = []

        def work():
            global now
            calls.append(1)
            now += first if len(calls) == 1 else then

        return work
    """
)

#: Fake calls of 100 µs (10 ms the first, where cold) against a min_time of 1 ms: the rounds
#: last real microseconds, far below max_time (whose limits read the real clock).
SUITE = textwrap.dedent(
    """
    import pytest

    import fakeclock

    pytestmark = pytest.mark.benchmark(min_time=0.001, max_time=0.1)


    def test_cold_first_call(benchmark):
        benchmark(fakeclock.function(0.01, 100e-6))


    def test_even_calls(benchmark):
        benchmark(fakeclock.function(100e-6, 100e-6))


    def test_short_calls(benchmark):
        benchmark(fakeclock.function(30e-6, 30e-6))
    """
)


def _rounds(path: Any) -> dict[str, tuple[int, int, float]]:
    """Per test of a pytest-benchmark JSON file: its rounds, calls a round and per-call
    minimum (seconds)."""
    return {
        bench["name"]: (
            bench["stats"]["rounds"],
            bench["stats"]["iterations"],
            bench["stats"]["min"],
        )
        for bench in json.loads(path.read_text())["benchmarks"]
    }


@pytest.mark.parametrize("warmup", [False, True])
def test_the_same_rounds_as_pytest_benchmark_with_the_same_settings(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, warmup: bool
) -> None:
    pytest.importorskip("pytest_benchmark")
    pytester.makepyfile(fakeclock=FAKECLOCK, test_suite=SUITE)
    options = ["-p", "no:cacheprovider", "--benchmark-timer=fakeclock.timer"]
    if warmup:
        # cattrs' addopts.
        options += ["--benchmark-warmup=true", "--benchmark-warmup-iterations=5"]
    monkeypatch.delenv("BENCHSDK_BENCHMARK_FIXTURE")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    theirs = pytester.runpytest_subprocess(
        *options, "-p", "no:benchsdk", "-p", "no:codspeed", "--benchmark-json=theirs.json"
    )
    theirs.assert_outcomes(passed=3)
    ours = pytester.runpytest_subprocess(
        *options, "--bench-benchmark-fixture=benchsdk", "--bench", "--bench-no-store",
        "--benchmark-json=ours.json",
    )  # fmt: skip
    ours.assert_outcomes(passed=3)
    there, here = _rounds(pytester.path / "theirs.json"), _rounds(pytester.path / "ours.json")
    assert (
        sorted(here)
        == sorted(there)
        == ["test_cold_first_call", "test_even_calls", "test_short_calls"]
    )
    for name, (rounds, iterations, minimum) in there.items():
        assert here[name][:2] == (rounds, iterations), name
        assert here[name][2] == pytest.approx(minimum, rel=1e-6), name
    if not warmup:
        # The cold first call: one call a round, ceil(0.1 s / 10 ms) rounds.
        assert there["test_cold_first_call"][:2] == (10, 1)
    else:
        # Warm: 10 calls (1 ms) a round, ceil(0.1 s / 1 ms) rounds.
        assert there["test_cold_first_call"][:2] == (100, 10)
