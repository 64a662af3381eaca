"""``--bench-failed-iterations=fail|record`` (ini ``bench_failed_iterations``) and a session
where no participant is available (upstream's ``NoAvailableParticipantsError``, exit 0)."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, store_path, stored_runs

FLAKY_TASK = """
@define_task
def task(participant, task_index, measure):
    if participant.name == "p1" and task_index == 1:
        raise TaskError("provider hiccup", code="flaky")
    measure(value=10 + task_index)
"""

RECORDED_LINE = (
    "benchsdk: 1 failed iteration(s) recorded as data (--bench-failed-iterations=record): "
    "the session passes."
)


def test_by_default_a_failed_iteration_fails_the_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(task=FLAKY_TASK))
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert RECORDED_LINE not in result.stdout.str()
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "failed"


@pytest.mark.slow
@pytest.mark.parametrize("where", ["option", "ini", "xdist"])
def test_record_makes_failed_iterations_data(pytester: pytest.Pytester, where: str) -> None:
    pytester.makepyfile(bench_x=bench(task=FLAKY_TASK))
    args = ["--bench", "--bench-dry-run", "-p", "no:cacheprovider"]
    if where == "ini":
        pytester.makeini("[pytest]\nbench_failed_iterations = Record\n")
    else:
        args.append("--bench-failed-iterations=record")
    if where == "xdist":
        args += ["-n", "2"]
    result = pytester.runpytest_inprocess(*args)
    # The iteration is still reported as failed (not passed), yet the session passes.
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*[[]TaskError (flaky)[]] provider hiccup*", RECORDED_LINE])
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "passed"


def test_record_still_fails_for_other_failures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(task=FLAKY_TASK),
        test_plain="def test_broken():\n    assert False\n",
    )
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "--bench-failed-iterations",
        "record",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=3, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert RECORDED_LINE not in result.stdout.str()


def test_record_still_fails_for_a_threshold(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(task=FLAKY_TASK))
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "--bench-failed-iterations=record",
        "--bench-threshold",
        "value: max < 5",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert RECORDED_LINE not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (
            ["--bench-failed-iterations=maybe"],
            "",
            '--bench-failed-iterations expects fail or record (got "maybe")',
        ),
        (
            [],
            "[pytest]\nbench_failed_iterations = often\n",
            'bench_failed_iterations (ini) expects fail or record (got "often")',
        ),
    ],
)
def test_a_bad_failed_iterations_value_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    pytester.makepyfile(bench_x=bench())
    if ini:
        pytester.makeini(ini)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_no_available_participant_says_upstreams_message_once_and_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NEEDS_A", raising=False)
    monkeypatch.delenv("NEEDS_B", raising=False)
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1", required_env_vars=["NEEDS_A"]), '
            'Participant("p2", required_env_vars=["NEEDS_A", "NEEDS_B"])], iterations=2'
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    message = (
        "No participants have their required env vars set \u2014 nothing to run (skipped: p1, p2)."
    )
    assert out.count(message) == 1
    result.stdout.fnmatch_lines(
        [
            "  Skipping p1: missing NEEDS_A",
            "  Skipping p2: missing NEEDS_A, NEEDS_B",
            f"  {message}",
        ]
    )
