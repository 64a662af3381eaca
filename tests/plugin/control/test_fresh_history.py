"""Starting a benchmark's history afresh (issue 46): ``--bench-history-from=now|RUN`` and
``pytest-benchsdk history BENCHMARK --restart [RUN]``; the runs before the start stay in the
store but leave the between-run noise and the history."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, store_path, stored_runs
from pytest_benchsdk._plugin.options.settings import BenchOptions
from pytest_benchsdk.cli import main

#: One participant, 6 iterations of a value about 10 ms.
BENCH = bench(
    'participants=[Participant("p1")], iterations=6',
    """
    @define_task
    def task(task_index, measure):
        measure(value_ms=10.0 + task_index % 3)
    """,
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("--bench", "--bench-dry-run", *args)


def test_the_option_is_now_or_a_run_and_needs_a_store(pytester: pytest.Pytester) -> None:
    options = BenchOptions.from_config(pytester.parseconfig(), environ={})
    assert options.history_from is None
    now = BenchOptions.from_config(pytester.parseconfig("--bench-history-from=now"), environ={})
    assert now.history_from == "now"
    run = BenchOptions.from_config(pytester.parseconfig("--bench-history-from", "ab12"), {})
    assert run.history_from == "ab12"
    with pytest.raises(pytest.UsageError, match="expects 'now' or a stored run id"):
        BenchOptions.from_config(pytester.parseconfig("--bench-history-from= "), environ={})
    with pytest.raises(pytest.UsageError, match="cannot be used with --bench-no-store"):
        BenchOptions.from_config(
            pytester.parseconfig("--bench-history-from=now", "--bench-no-store"), environ={}
        )


@pytest.mark.slow
def test_a_session_starts_the_history_afresh(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=BENCH)
    for _ in range(3):
        assert _run(pytester, "--bench-compare").ret == 0
    result = _run(pytester, "--bench-compare", "--bench-history-from=now")
    assert result.ret == 0, result.stdout.str()
    # The session's own run starts the history: no earlier run counts in its noise.
    result.stdout.fnmatch_lines(["    Between-run noise: unknown (0 earlier complete run(s)*"])
    result = _run(pytester, "--bench-compare")
    result.stdout.fnmatch_lines(["    Between-run noise: unknown (1 earlier complete run(s)*"])
    first = stored_runs(store_path(pytester))[0].run_id  # (oldest first)
    result = _run(pytester, "--bench-compare", f"--bench-history-from={first[:10]}")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"benchsdk: History of demo: starts afresh with run {first} *"])
    result.stdout.fnmatch_lines(
        ["    Between-run noise: from the 5 earlier complete runs with the same setup"]
    )
    result = _run(pytester, "--bench-history-from=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-history-from=nope: no run nope in *closest: *"])
    assert "Traceback" not in result.stderr.str()


@pytest.mark.slow
def test_the_history_command_restarts_a_history(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(bench_x=BENCH)
    for _ in range(2):
        assert _run(pytester).ret == 0
    store = str(store_path(pytester))

    def cli(*args: str) -> tuple[int, str]:
        capsys.readouterr()  # (the sessions' output)
        code = main(["--store", store, *args])
        out, err = capsys.readouterr()
        return code, out + err

    code, out = cli("history", "demo", "--restart")
    assert (code, out.strip()) == (
        0,
        "History of demo: starts afresh with its next run (the 2 stored run(s) stay in the "
        "store, out of its history)",
    )
    assert _run(pytester).ret == 0
    code, out = cli("history", "demo", "--json")
    assert code == 0
    assert '"before a fresh start": 2' in out
    newest = stored_runs(store_path(pytester))[-1].run_id
    assert newest in out
    code, out = cli("history", "demo", "--restart", newest[:8])
    assert (code, out.strip()) == (
        0,
        f"History of demo: starts afresh with run {newest} "
        f"({stored_runs(store_path(pytester))[-1].started_at})",
    )
    code, out = cli("history", "--restart")
    assert code == 2
    assert "--restart needs the BENCHMARK whose history starts afresh" in out
    code, out = cli("history", "demo", "--restart", "zzz")
    assert code == 2
    assert "--restart zzz: no run zzz in " in out
    code, out = cli("history", "other", "--restart")
    assert code == 2
    assert "--restart: no runs of benchmark other in " in out
