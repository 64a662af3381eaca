"""A session on a damaged results store (issue 32, item 1): real stores written by real
sessions, random bytes over the middle of the file (its header intact).

Found when the session opens the store, nothing runs and nothing is written (a usage error,
one line saying what to do); found while the session runs, the session says so in one line,
writes nothing more to the store, keeps its records in the journal and exits non-zero, and
``pytest-benchsdk store recover`` gets them back into a new file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.cli import cli
from helpers.damage import damage, digest
from helpers.sessions import bench, store_path

#: 2 × 300 iterations with a log line each: a store of about 600 KB, so its middle pages are
#: the records' and the log lines'.
BENCH = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=300',
    """
    import pathlib

    @define_task
    def task(task_index, measure, log):
        pathlib.Path("ran").touch()
        log("line " + "x" * 200)
        measure(value=10 + task_index % 7)
    """,
)

#: After the first record, the store's file is damaged under the session: random bytes over
#: all but its first and last pages (the pages the connection holds in memory are dropped).
DAMAGE_AFTER_FIRST = """
import os, random

done = []

def pytest_benchsdk_record(config, benchmark, participant, record):
    if done:
        return
    done.append(1)
    store = config.pluginmanager.get_plugin("benchsdk-controller").store
    store._db._conn.execute("PRAGMA shrink_memory")
    size = os.path.getsize(store.path)
    with open(store.path, "r+b") as file:
        file.seek(4 * 4096)
        file.write(random.Random(32).randbytes(size - 8 * 4096))
"""


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(*args, cwd=cwd)


@pytest.mark.slow
def test_a_session_refuses_a_damaged_store_before_anything_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=BENCH)
    first = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-q")
    assert first.ret == 0, first.stdout.str()
    path = store_path(pytester)
    (pytester.path / "ran").unlink()
    damage(path)
    before = digest(path)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output
    result.stderr.fnmatch_lines(
        [
            f"ERROR: the results store {path} is damaged (SQLite: *): nothing more is written "
            f"to it. See what is wrong with `pytest-benchsdk --store {path} store check`; "
            f"salvage what can be read into a new file with `pytest-benchsdk --store {path} "
            "store recover -o NEW.sqlite3` (the path is the default*"
        ]
    )
    assert not (pytester.path / "ran").exists()
    assert digest(path) == before


@pytest.mark.slow
def test_a_store_damaged_while_the_session_runs_keeps_the_sessions_records(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=BENCH)
    first = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-q")
    assert first.ret == 0, first.stdout.str()
    pytester.makeconftest(DAMAGE_AFTER_FIRST)
    path = store_path(pytester)
    # A process of its own: what recovery reads of the interrupted run is what its process
    # left at exit.
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "-q")
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output
    line = (
        f"*benchsdk: ERROR the results store {path} is damaged (SQLite: *): nothing more is "
        f"written to it. See what is wrong with*; this session's records it had not committed "
        f"yet are kept in {path}-journal-*, which `store recover` reads too; the session stops"
    )
    result.stdout.fnmatch_lines([line, "*= benchmarks =*", line.replace("benchsdk: ", "", 1)])
    # Not stored, and nobody pressed Ctrl-C.
    assert "Results stored in" not in output
    assert "Ctrl-C" not in output
    (journal,) = path.parent.glob(f"{path.name}-journal-*")
    assert journal.stat().st_size > 0
    # (Mostly a group commit meets the damage while iterations still run; on a machine too
    # loaded for the group's timer, the session end's commit does.)
    ran = int(result.parseoutcomes()["passed"])
    assert 1 <= ran <= 600
    if ran < 600:  # stopped while it ran: pytest's banner points at the line
        assert f"Interrupted: benchsdk: the results store {path} is damaged (see the ERROR" in (
            output
        )
    # Every command says the same line of the damaged store ...
    runs = _cli(pytester.path, "runs")
    assert runs.returncode == 2
    assert runs.stderr.startswith(
        "pytest-benchsdk: error: the results store .benchmarks/benchsdk.sqlite3 is damaged"
    )
    # ... and recover gets this session's records back, from the journal, into a new file.
    recovered = _cli(pytester.path, "store", "recover", "-o", "new.sqlite3")
    assert recovered.returncode == 0, recovered.stderr
    assert "from 1 journal(s) beside it" in recovered.stdout
    listing = _cli(pytester.path, "--store", "new.sqlite3", "runs")
    assert listing.returncode == 0, listing.stderr
    # The session's run (its process is gone) is interrupted with what the session got; the
    # first record was committed to the damaged pages before the damage was found.
    newest = listing.stdout.splitlines()[1]
    assert f"interrupted ({ran - 1} of 600 iterations ran)" in newest or (
        f"interrupted ({ran} of 600 iterations ran)" in newest
    ), listing.stdout
    assert journal.exists()  # recover only reads: the damaged store's files stay as they were
