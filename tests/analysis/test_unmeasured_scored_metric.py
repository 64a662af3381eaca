"""A scored metric that no iteration measured (``measure()`` inside a ``with step(...)`` block
writes to the step's data, which scoring does not read) scores nothing: the session says why,
in the terminal, ``--bench-json`` and Markdown, instead of ranking everyone at 0, and fails
with one error line (issue 46: nothing passes on nothing)."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, read_json

SCORING = (
    '{"metrics": [{"key": "hash_ms", "unit": "ms", "ceiling": 5,'
    ' "weights": {"median": 0.6, "p95": 0.4, "p99": 0.0}}]}'
)

#: The mistake as a user made it: the measure lands in the step's data.
IN_A_STEP = bench(
    f'participants=[Participant("sha256"), Participant("md5")], iterations=5, scoring={SCORING}',
    """
    import time

    @define_task
    def task(step, measure):
        with step("hash"):
            t = time.perf_counter()
            measure(hash_ms=(time.perf_counter() - t) * 1000)
    """,
)


def test_the_session_says_the_scored_metric_was_never_measured(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_hash=IN_A_STEP)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-json", "run.json", "--bench-markdown", "run.md"
    )
    result.assert_outcomes(passed=10, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "  ERROR scoring on hash_ms: no participant measured hash_ms; the keys there "
            "are: latency_ms, *",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "  warning [unmeasured-metric] sha256, md5 (hash_ms): scored, but no passing iteration"
            " measured",
            "*measure(<key>=value) in the task (inside a `with step(...)` block measure() writes*",
        ]
    )
    (entry,) = read_json(pytester.path / "run.json")["benchmarks"]
    found = [w for w in entry["result"]["warnings"] if w["code"] == "unmeasured-metric"]
    assert sorted(w["participant"] for w in found) == ["md5", "sha256"]
    assert all(w["metrics"] == ["hash_ms"] for w in found)
    assert "unmeasured-metric" in (pytester.path / "run.md").read_text()


def test_silenced_by_its_code(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_hash=IN_A_STEP)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-warnings-ignore", "unmeasured-metric"
    )
    # The warning is silenced; the session still fails on the key nobody measured.
    result.assert_outcomes(passed=10, errors=1)
    assert "unmeasured-metric" not in result.stdout.str()
