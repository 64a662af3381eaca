"""A task that raises ``KeyboardInterrupt``, ``SystemExit`` or ``GeneratorExit`` itself fails
its own iteration with one line: the session goes on, no thread traceback through the
executor, no "coroutine was never awaited" warning, no Ctrl-C message (issue 32, item 10)."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, store_path, stored_records, stored_runs
from pytest_benchsdk._plugin.control.interrupts import NOT_CTRL_C_LINE, STOPPING_LINE

EXITS = {
    "kbd": 'raise KeyboardInterrupt("from the task")',
    "sysexit": "sys.exit(3)",
    "genexit": "raise GeneratorExit()",
}


def _exits_bench(kind: str, concurrency: int) -> str:
    body = "\n".join(
        f"        if participant.name == {name!r}:\n            {statement}"
        for name, statement in EXITS.items()
    )
    header = "async def" if kind == "async" else "def"
    pause = "        await asyncio.sleep(0)\n" if kind == "async" else ""
    return bench(
        f"participants=[{', '.join(f'Participant({n!r})' for n in [*EXITS, 'ok'])}], "
        f"iterations=2, concurrency={concurrency}",
        f"""
@define_task
{header} task(participant, task_index, measure):
{pause}{body}
        measure(value=task_index)
""".replace("\n        ", "\n    "),
        prelude="import asyncio\nimport sys\n",
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "concurrency"), [("sync", 1), ("sync", 2), ("async", 1), ("async", 2)]
)
def test_a_tasks_own_exit_fails_its_iteration_with_one_line(
    pytester: pytest.Pytester, kind: str, concurrency: int
) -> None:
    pytester.makepyfile(bench_exits=_exits_bench(kind, concurrency))
    args = ["--bench", "--bench-dry-run", "-p", "no:cacheprovider", "-W", "error::RuntimeWarning"]
    result = pytester.runpytest_subprocess(*args)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    result.assert_outcomes(passed=2, failed=6)
    for name in ("KeyboardInterrupt: from the task", "SystemExit: 3", "GeneratorExit"):
        result.stdout.fnmatch_lines(
            [f"bench_exits.py:*: the task raised {name}: its iteration failed (a task's own *"]
        )
    for noise in ("Traceback", "never awaited", "executor.py", "context.py", "Warning"):
        assert noise not in output
    assert STOPPING_LINE not in output
    assert NOT_CTRL_C_LINE not in output
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "failed"
    records = stored_records(store_path(pytester), run.run_id)
    codes = {p: [r.get("errorCode") for r in rs] for p, rs in records.items()}
    assert codes == {
        "kbd": ["KeyboardInterrupt"] * 2,
        "sysexit": ["SystemExit"] * 2,
        "genexit": ["GeneratorExit"] * 2,
        "ok": [None, None],
    }


@pytest.mark.slow
def test_a_keyboard_interrupt_a_fixture_raises_is_not_called_a_ctrl_c(
    pytester: pytest.Pytester,
) -> None:
    """pytest stops on it (as on any KeyboardInterrupt outside a task); the session says it
    was raised, not pressed."""
    pytester.makeconftest(
        "import pytest\n"
        "@pytest.fixture\n"
        "def stops(task_index):\n"
        "    if task_index == 1:\n"
        "        raise KeyboardInterrupt\n"
    )
    pytester.makepyfile(
        bench_fixture=bench(
            'participants=[Participant("p")], iterations=3',
            """
            @define_task
            def task(stops, measure):
                measure(value=1)
            """,
        )
    )
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([NOT_CTRL_C_LINE])
    assert STOPPING_LINE not in result.stdout.str()
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    assert run.record_count == 1


@pytest.mark.slow
def test_with_sigint_ignored_a_keyboard_interrupt_is_the_tasks_own(
    pytester: pytest.Pytester,
) -> None:
    """Started as a shell's background job (or under nohup) the session cannot get a Ctrl-C:
    SIGINT is ignored, the plugin installs no handler, and a task's own KeyboardInterrupt on
    the main thread still fails only its iteration."""
    import signal
    import subprocess
    import sys

    pytester.makepyfile(bench_exits=_exits_bench("sync", 1))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--bench", "--bench-dry-run", "-p", "no:cacheprovider"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        check=False,
    )
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout + proc.stderr
    assert "Ctrl-C" not in proc.stdout, proc.stdout
