"""A participant may be a plain name: ``participants=["json", "pickle"]``."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, read_json


def test_string_participants_run_select_and_score(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=["json", "pickle", Participant("gated", required_env_vars=["NOPE"])],\n'
            "iterations=2",
            """
            import json
            import pickle

            @define_task
            def task(participant, measure):
                codec = {"json": json, "pickle": pickle}[participant.name]
                measure(size=len(codec.dumps({"a": [1, 2, 3]})))
                assert participant.required_env_vars == ()
            """,
        )
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-json", "out.json", "-rs"
    )
    result.assert_outcomes(passed=4, skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED [[]2] bench_x.py: gated: missing NOPE"])
    run = read_json(pytester.path / "out.json")["benchmarks"][0]
    assert [p["participant"] for p in run["participants"]] == ["json", "pickle"]
    assert run["config"]["participants"] == ["json", "pickle"]
    selected = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-provider", "pickle"
    )
    selected.assert_outcomes(passed=2)
    assert pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-k", "json").ret == 0


def test_bad_entries_are_reported_with_upstreams_fields(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench('participants=["json", "", "json", 3], iterations=1'))
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*Invalid benchmark config:",
            "*  - participants[[]1].name: must be a non-empty string",
            "*  - participants[[]2].name: duplicate participant name: json",
            "*  - participants[[]3]: must be a Participant, a name (str), a dict or an object "
            "with a name",
        ]
    )
