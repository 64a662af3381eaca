"""The store's file: a database of another application is refused and left byte for byte as it
was, a read-only store can still be read by the store CLI (sessions refuse it), and the
outbox's commits are durable (an fsync each) while the records' are not."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.cli import cli
from helpers.sessions import bench, store_path, stored_runs
from pytest_benchsdk.store import ResultStore, StoreError, StoreReadOnlyError

NOBODY = 65534


# -- a database that is not a results store ---------------------------------------------------


def _app_database(path: Path, journal: str, user_version: int) -> bytes:
    """An application's SQLite database with a table and rows; returns its bytes."""
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO users (name) VALUES (?)", [(f"user {i}",) for i in range(50)])
    if user_version:
        # An application with its own migrations: our migration 3 would ALTER its "runs".
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY)")
        conn.execute(f"PRAGMA user_version = {user_version}")
    conn.commit()
    conn.close()
    return path.read_bytes()


FOREIGN = {
    "rollback journal": ("delete", 0),
    "wal": ("wal", 0),
    "own user_version": ("delete", 3),
}


@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_database_of_another_application_is_refused_and_left_unchanged(
    pytester: pytest.Pytester, kind: str
) -> None:
    journal, user_version = FOREIGN[kind]
    app = pytester.path / "app.db"
    before = _app_database(app, journal, user_version)

    with pytest.raises(StoreError, match="SQLite database of something else") as info:
        ResultStore(app)
    assert "tables: " in str(info.value)
    assert "users" in str(info.value)
    assert app.read_bytes() == before

    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-store", str(app))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --bench-store: cannot use results store {app}: it is an SQLite database "
            "of something else (tables: *users*), not a pytest-benchsdk results store; it was "
            "left unchanged. Choose another path*"
        ]
    )
    assert app.read_bytes() == before

    cli = _cli(["--store", str(app), "runs"], cwd=pytester.path)
    assert cli.returncode == 2
    assert "SQLite database of something else" in cli.stderr
    assert app.read_bytes() == before
    assert sorted(p.name for p in pytester.path.glob("app.db*")) == ["app.db"]


def test_an_empty_database_still_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite3"
    sqlite3.connect(path).close()
    with ResultStore(path) as store:
        assert store.list_runs() == []


# -- read-only stores -------------------------------------------------------------------------


def _cli(
    args: list[str], *, cwd: Path, user: int | None = None
) -> subprocess.CompletedProcess[str]:
    if user is None:  # this process's user: cli.main here
        return cli(*args, cwd=cwd)
    command = [sys.executable, "-m", "pytest_benchsdk", *args]
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        command, capture_output=True, text=True, cwd=cwd, env=env, timeout=120, check=False
    )


def _as_nobody_works(cwd: Path) -> bool:
    """Whether this test can run the CLI as an unprivileged user (root, setpriv, and the
    package readable by others)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    probe = _cli(["--help"], cwd=cwd, user=NOBODY)
    return probe.returncode == 0


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory an unprivileged user can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="benchsdk-ro-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for child in path.rglob("*"):
            child.chmod(0o755 if child.is_dir() else 0o644)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def finished_store(pytester: pytest.Pytester) -> Path:
    """A store holding one finished dry run (closed: no -wal file left)."""
    pytester.makepyfile(bench_x=bench())
    assert pytester.runpytest_inprocess("--bench", "--bench-dry-run").ret == 0
    return store_path(pytester)


def _mount_read_only_copy(source: Path, directory: Path) -> bool:
    """``directory`` becomes a read-only tmpfs holding a copy of ``source`` (root only)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    directory.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(directory)], capture_output=True
    ).returncode:
        return False
    shutil.copy(source, directory / source.name)
    subprocess.run(["mount", "-o", "remount,ro", str(directory)], check=True)
    return True


def _check_read_commands(path: Path, run_id: str, cwd: Path, user: int | None) -> None:
    """``runs``, ``show`` and ``export`` (JSON and CSV) read the store; nothing changes."""
    before = path.read_bytes()
    listed = _cli(["--store", str(path), "runs"], cwd=cwd, user=user)
    assert listed.returncode == 0, listed.stderr
    assert run_id[:12] in listed.stdout
    shown = _cli(["--store", str(path), "show", run_id[:8]], cwd=cwd, user=user)
    assert shown.returncode == 0, shown.stderr
    assert f"Run {run_id}" in shown.stdout
    assert re.search(r"p1\s+2/2", shown.stdout), shown.stdout
    exported = _cli(["--store", str(path), "export", run_id], cwd=cwd, user=user)
    assert exported.returncode == 0, exported.stderr
    assert '"participant": "p1"' in exported.stdout
    csv = _cli(["--store", str(path), "export", run_id, "--format", "csv"], cwd=cwd, user=user)
    assert csv.returncode == 0, csv.stderr
    assert len(csv.stdout.splitlines()) == 5  # the header and four records
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.slow
def test_read_commands_work_in_a_read_only_directory(
    pytester: pytest.Pytester, finished_store: Path, shared_dir: Path
) -> None:
    (run,) = stored_runs(finished_store)
    if _as_nobody_works(shared_dir):
        # The directory is root's: the unprivileged user can read it but create nothing there
        # (not SQLite's -shm file either).
        directory = shared_dir / "ro"
        directory.mkdir(mode=0o755)
        shutil.copy(finished_store, directory / "s.sqlite3")
        (directory / "s.sqlite3").chmod(0o644)
        _check_read_commands(directory / "s.sqlite3", run.run_id, shared_dir, NOBODY)
        return
    directory = pytester.path / "ro"
    if os.geteuid() != 0:
        directory.mkdir()
        shutil.copy(finished_store, directory / "s.sqlite3")
        directory.chmod(0o555)
        try:
            _check_read_commands(directory / "s.sqlite3", run.run_id, pytester.path, None)
        finally:
            directory.chmod(0o755)
        return
    if not _mount_read_only_copy(finished_store, directory):
        pytest.skip("root without setpriv for another user, and no tmpfs to mount read-only")
    try:
        _check_read_commands(directory / finished_store.name, run.run_id, pytester.path, None)
    finally:
        subprocess.run(["umount", str(directory)], capture_output=True)


@pytest.mark.slow
def test_read_commands_work_on_a_read_only_file(
    pytester: pytest.Pytester, finished_store: Path, shared_dir: Path
) -> None:
    """A store file without write permission in a writable directory (root writes through
    file modes, so this needs another user)."""
    (run,) = stored_runs(finished_store)
    user: int | None = None
    if os.geteuid() == 0:
        if not _as_nobody_works(shared_dir):
            pytest.skip("root bypasses file modes, and the CLI cannot run as another user here")
        user = NOBODY
    directory = shared_dir / "rw"
    directory.mkdir(mode=0o755)
    path = directory / "s.sqlite3"
    shutil.copy(finished_store, path)
    if user is not None:
        os.chown(directory, user, user)
        os.chown(path, user, user)
    path.chmod(0o444)
    before = path.read_bytes()
    listed = _cli(["--store", str(path), "runs"], cwd=shared_dir, user=user)
    assert listed.returncode == 0, listed.stderr
    assert run.run_id[:12] in listed.stdout
    shown = _cli(["--store", str(path), "show", run.run_id], cwd=shared_dir, user=user)
    assert shown.returncode == 0, shown.stderr
    exported = _cli(["--store", str(path), "export", run.run_id], cwd=shared_dir, user=user)
    assert exported.returncode == 0, exported.stderr
    assert path.read_bytes() == before
    # merge writes its output: a read-only output is still an error.
    merged = _cli(
        ["--store", str(path), "merge", str(path), "-o", str(path)], cwd=shared_dir, user=user
    )
    assert merged.returncode == 2
    assert "read-only" in merged.stderr
    assert path.read_bytes() == before


def test_a_read_only_open_writes_nothing_and_refuses_writes(finished_store: Path) -> None:
    before = finished_store.read_bytes()
    with ResultStore(finished_store, read_only=True) as store:
        assert store.read_only
        (run,) = store.list_runs()
        assert [len(p.records) for p in store.participant_records(run.run_id)] == [2, 2]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.finish_run(run.run_id, "failed")
    assert finished_store.read_bytes() == before


@pytest.mark.slow
def test_a_session_still_refuses_a_read_only_store(
    pytester: pytest.Pytester, finished_store: Path
) -> None:
    directory = pytester.path / "ro"
    if os.geteuid() != 0:
        directory.mkdir()
        shutil.copy(finished_store, directory / "s.sqlite3")
        (directory / "s.sqlite3").chmod(0o444)
    elif not _mount_read_only_copy(finished_store, directory):
        pytest.skip("cannot mount a read-only tmpfs here")
    path = directory / finished_store.name if os.geteuid() == 0 else directory / "s.sqlite3"
    try:
        with pytest.raises(StoreReadOnlyError):
            ResultStore(path)
        result = pytester.runpytest_inprocess(
            "--bench", "--bench-dry-run", "--bench-store", str(path)
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: --bench-store: *read-only*"])
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(directory)], capture_output=True)


# -- durability -------------------------------------------------------------------------------

#: Run in a child under strace: marks separate the steps, so the fsyncs of each can be counted.
DURABILITY_PROBE = textwrap.dedent(
    """
    import os, sys
    from helpers.store_processes import ENV
    from pytest_benchsdk.records import TaskRecord
    from pytest_benchsdk.store import ResultStore

    def mark(name):
        os.write(1, f"MARK {name}\\n".encode())

    store = ResultStore(sys.argv[1])
    run = store.begin_run(benchmark_slug="s", benchmark_name="S", file=None, knobs={},
                          participants=["p"], config_snapshot={}, environment=ENV,
                          dry_run=False)
    mark("open")
    for i in range(20):
        store.add_record(run, "p", TaskRecord(task_index=i, status="success"), ["a line"])
    mark("records")
    key = f"{run}/run"
    entry = store.outbox_put(run, "run", key, {"slug": "s"})
    mark("outbox_put")
    store.state_set(run, "platform.run", {"id": "run_1"})
    mark("state_set")
    store.outbox_mark_sent(entry, {"run": {"id": "run_1"}})
    mark("outbox_mark_sent")
    store.outbox_mark_failed(store.outbox_put(run, "claim", f"{run}/claim/p", {}), "no answer")
    mark("outbox_mark_failed")
    store.close()
    """
)


@pytest.mark.slow
def test_outbox_commits_are_synced_and_record_commits_are_not(tmp_path: Path) -> None:
    """What a power cut can cost: record commits are not synced (WAL, synchronous=NORMAL);
    every outbox and platform-state commit is (synchronous=FULL), and with it every record
    committed before it. Counted with strace: the fsyncs between the probe's marks."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    trace = tmp_path / "trace.txt"
    tests_dir = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests_dir), *sys.path])}
    done = subprocess.run(
        [
            "strace", "-f", "-qq", "-o", str(trace), "-e", "trace=fsync,fdatasync,write",
            sys.executable, "-c", DURABILITY_PROBE, str(tmp_path / "s.sqlite3"),
        ],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    syncs: dict[str, int] = {}
    current = "start"
    for line in trace.read_text().splitlines():
        found = re.search(r'write\(1, "MARK (\w+)\\n"', line)
        if found:
            current = found.group(1)
            syncs[current] = 0
        elif re.search(r"\b(fsync|fdatasync)\(", line) and current != "start":
            syncs[current] += 1
    assert list(syncs) == [
        "open", "records", "outbox_put", "state_set", "outbox_mark_sent", "outbox_mark_failed",
    ]  # fmt: skip
    # The fsyncs of a step are counted after its mark: "open" holds the records' commits.
    assert syncs["open"] == 0, syncs
    for step in ("records", "outbox_put", "state_set", "outbox_mark_sent"):
        assert syncs[step] >= 1, (step, syncs)


# -- where the store's path came from ---------------------------------------------------------


def test_an_unusable_default_store_names_the_path_and_that_it_is_the_default(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=bench())
    (pytester.path / ".benchmarks").write_text("not a directory")
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    path = pytester.path / ".benchmarks" / "benchsdk.sqlite3"
    result.stderr.fnmatch_lines(
        [
            f"ERROR: cannot use results store {path}: cannot create its directory: "
            f"{pytester.path / '.benchmarks'} is not a directory (the path is the default, "
            ".benchmarks/benchsdk.sqlite3 under the rootdir; choose another with --bench-store "
            "PATH, or run without a store with --bench-no-store)"
        ]
    )
    assert "--bench-store:" not in result.stderr.str()


def test_an_unusable_store_from_the_ini_file_names_the_ini_file(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=bench())
    ini = pytester.makeini("[pytest]\nbench_store = app.db\n")
    _app_database(pytester.path / "app.db", "delete", 0)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: cannot use results store {pytester.path / 'app.db'}: it is an SQLite "
            f"database of something else * (the path is bench_store in {ini}; choose another "
            "with --bench-store PATH, or run without a store with --bench-no-store)"
        ]
    )
