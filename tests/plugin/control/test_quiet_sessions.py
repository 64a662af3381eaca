"""``-q`` shortens the whole bench session's text (issue 46, the messages): the header names
each benchmark only, the summary gives the scores and verdicts."""

from __future__ import annotations

import pytest

from helpers.sessions import bench

SCORED = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=3, '
    'scoring={"metrics": [{"key": "value", "ceiling": 100, '
    '"weights": {"median": 0.6, "p95": 0.25, "p99": 0.15}}]}',
    "@define_task\ndef task(participant, measure):\n"
    '    measure(value={"p1": 20, "p2": 50}[participant.name])\n',
)


def test_quiet_prints_names_scores_and_verdicts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=SCORED)
    default = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-no-store")
    quiet = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-no-store", "-q")
    assert quiet.ret == default.ret == 0
    out = quiet.stdout.str()
    assert "Knobs:" in default.stdout.str()
    assert "Knobs:" not in out
    assert "Metrics" not in out
    quiet.stdout.fnmatch_lines(
        [
            "benchsdk: Demo [bench_x.py]",
            "*= benchmarks =*",
            "Demo (demo) [bench_x.py]",
            "  Ran * UTC (*); status: passed",
            "  #  participant  success  value med/p95/p99  score  95% interval  keeps rank",
            "  1  p1           100%     20.0/20.0/20.0     80.00  80.0–80.0     100%",
            "  2  p2           100%     50.0/50.0/50.0     50.00  50.0–50.0     100%",
            "  1 warning(s) (p99-few-samples): without -q a line per code, with -v each one",
        ]
    )
    assert len(quiet.outlines) < len(default.outlines)
