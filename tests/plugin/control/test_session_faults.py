"""Every fault a user can cause at the session end, in the store or in the options, ends in a
clear message and complete data."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from helpers.platform_server import API_KEY
from helpers.sessions import SCORING, bench, read_json, store_path, stored_runs
from pytest_benchsdk import ResultStore
from pytest_benchsdk._plugin.options.settings import BenchOptions

#: A task that leaves a marker file when any iteration runs.
MARKING_TASK = """
import pathlib

@define_task
def task(task_index, measure):
    pathlib.Path("ran").write_text("yes")
    measure(value=10 + task_index)
"""

#: A second, healthy, scored benchmark: it must finish whatever the first one does.
HEALTHY = bench(
    f'participants=[Participant("q1")], iterations=2,\nscoring={SCORING},\n'
    "on_complete=lambda outcome: open('healthy-complete', 'w').close()",
    slug="healthy",
    name="Healthy",
)


def _statuses(pytester: pytest.Pytester) -> dict[str, str]:
    return {run.benchmark_slug: run.status for run in stored_runs(store_path(pytester))}


def _strict_json(path: Path) -> dict:
    def reject(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")

    data: dict = json.loads(path.read_text(), parse_constant=reject)
    return data


# -- 6. one failing piece at the session end does not take the rest with it -----------------


BROKEN_FINISHES = {
    "on_score raises": (
        bench(
            'participants=[Participant("p1")], iterations=2,\non_score=lambda lower, higher: 1 / 0',
        ),
        "scoring failed: ZeroDivisionError: division by zero",
    ),
    "on_score wrong signature": (
        bench(
            'participants=[Participant("p1")], iterations=2,\non_score=on_score',
            prelude="def on_score():\n    raise AssertionError('never called')\n",
        ),
        "scoring failed: on_score is called as on_score(lower_is_better, higher_is_better)*",
    ),
    "a scoring value that raises": (
        bench(
            'participants=[Participant("p1")], iterations=2,\non_score=on_score',
            prelude=(
                "def on_score(lower, higher):\n"
                "    from pytest_benchsdk import ScoringSpec\n"
                "    return ScoringSpec(metrics=[lower('v', ceiling=10, value=lambda r: 1 / 0,\n"
                "        weights={'median': 1, 'p95': 0, 'p99': 0})])\n"
            ),
        ),
        "scoring failed: ZeroDivisionError: division by zero",
    ),
    "on_complete SystemExit": (
        bench(
            'participants=[Participant("p1")], iterations=2,\non_complete=on_complete',
            prelude="def on_complete(outcome):\n    raise SystemExit(4)\n",
        ),
        "on_complete failed: SystemExit: 4",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_FINISHES))
def test_a_failing_finish_is_reported_under_its_benchmark(
    pytester: pytest.Pytester, case: str
) -> None:
    source, error = BROKEN_FINISHES[case]
    pytester.makepyfile(bench_broken=source, bench_healthy=HEALTHY)
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-json", str(out), "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "*= benchmarks =*",
            "Demo (demo) [[]bench_broken.py[]]",
            f"  ERROR {error}",
        ]
    )
    result.stdout.fnmatch_lines(["Healthy (healthy) [[]bench_healthy.py[]]", "  Scores:"])
    # Everything else still happened: the other benchmark's on_complete, the JSON, the store.
    assert (pytester.path / "healthy-complete").exists()
    doc = _strict_json(out)
    by_slug = {b["benchmarkSlug"]: b for b in doc["benchmarks"]}
    assert len(by_slug["demo"]["errors"]) == 1
    assert by_slug["healthy"]["errors"] == []
    assert by_slug["healthy"]["scores"] is not None
    assert _statuses(pytester) == {"demo": "failed", "healthy": "passed"}


def test_a_number_too_large_for_a_float_is_no_sample_as_in_javascript(
    pytester: pytest.Pytester,
) -> None:
    # 10**400 is Infinity to JavaScript: no sample for scoring, the tables, the analyses. The
    # run is summarised and stored; the scored metric shows "-". Nothing else measured the
    # scored metric, so the run fails with one line and ranks nobody (issue 46).
    pytester.makepyfile(
        bench_x=bench(
            f'participants=[Participant("p1")], iterations=2,\nscoring={SCORING}',
            "@define_task\ndef task(measure):\n    measure(value=10**400, other=3)\n",
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "  Ran * status: failed (errors)",
            "  Metrics (not scored):",
            "    p1           other   3.00/3.00/3.00 * 2",
            "    #  participant  success  value med/p95/p99  score*",
            "    -  p1           100%     -                  0.00",
        ]
    )
    assert result.stdout.str().count("ERROR scoring on value: no participant measured value") == 1


def test_a_scoring_spec_error_skips_on_complete_as_upstream(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=1,\non_score=lambda lower, higher: 5,\n'
            "on_complete=lambda outcome: open('completed', 'w').close()"
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["  ERROR scoring failed: on_score must return a ScoringSpec*"])
    assert not (pytester.path / "completed").exists()


def test_a_failing_hook_and_an_unwritable_json_at_the_end_do_not_stop_the_rest(
    pytester: pytest.Pytester,
) -> None:
    out = pytester.path / "run.json"
    # on_complete takes the JSON's place with a directory after the up-front check passed.
    pytester.makepyfile(
        bench_x=bench(
            f'participants=[Participant("p1")], iterations=1,\nscoring={SCORING},\n'
            f"on_complete=lambda outcome: __import__('os').mkdir({str(out)!r})"
        ),
        bench_healthy=HEALTHY,
    )
    pytester.makeconftest(
        "def pytest_benchsdk_scores(config, benchmark, results):\n"
        "    if benchmark == 'demo':\n"
        "        raise RuntimeError('scores hook broke')\n"
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-json", str(out))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "Healthy (healthy) [[]bench_healthy.py[]]",
            "  Scores:",
            "Demo (demo) [[]bench_x.py[]]",
            "  ERROR pytest_benchsdk_scores hook failed: RuntimeError: scores hook broke",
            f"ERROR --bench-json {out}: cannot write: IsADirectoryError*",
        ]
    )
    assert "Results written to" not in result.stdout.str()
    assert _statuses(pytester) == {"demo": "failed", "healthy": "passed"}
    with ResultStore(store_path(pytester)) as store:
        (demo,) = store.list_runs(benchmark_slug="demo")
        assert store.scores(demo.run_id)  # the scores were kept although the hook failed


@pytest.mark.parametrize("where", ["directory", "under a file"])
def test_bench_json_path_is_checked_up_front(pytester: pytest.Pytester, where: str) -> None:
    pytester.makepyfile(bench_x=bench(task=MARKING_TASK))
    if where == "directory":
        (pytester.path / "out").mkdir()
        target, message = "out", "is a directory; give a file path"
    else:
        (pytester.path / "blocker").write_text("x")
        target, message = "blocker/sub/run.json", "cannot create its directory: *blocker is not*"
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-json", target)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --bench-json {target}: {message}"])
    assert not (pytester.path / "ran").exists()


# -- 7. the store's problems are usage errors -----------------------------------------------


def _newer_schema(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()


def _truncated(path: Path) -> None:
    ResultStore(path).close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


STORE_FAULTS = {
    "directory": (lambda p: p.mkdir(), "it is a directory; give a file path*"),
    "garbage": (lambda p: p.write_bytes(b"not sqlite " * 200), "*file is not a database*"),
    "truncated": (_truncated, "*is damaged (SQLite: database disk image is malformed)*"),
    "parent is a file": (None, "cannot create its directory: *blocker is not a directory"),
    "newer schema": (_newer_schema, "*schema version 99 is newer than this pytest-benchsdk*"),
}


@pytest.mark.parametrize("fault", [*STORE_FAULTS, "/dev/null"])
def test_store_problems_are_usage_errors_before_anything_runs(
    pytester: pytest.Pytester, fault: str
) -> None:
    pytester.makepyfile(bench_x=bench(task=MARKING_TASK))
    if fault == "/dev/null":
        target, message = "/dev/null", "it is not a regular file; give a file path"
    elif fault == "parent is a file":
        (pytester.path / "blocker").write_text("x")
        target, message = str(pytester.path / "blocker" / "s.sqlite3"), STORE_FAULTS[fault][1]
    else:
        make, message = STORE_FAULTS[fault]
        path = pytester.path / "store.sqlite3"
        assert make is not None
        make(path)
        target = str(path)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-store", target)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([f"ERROR: --bench-store: *{target}*{message}"])
    assert not (pytester.path / "ran").exists()


@pytest.mark.slow
def test_store_problem_under_xdist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(bench_x=bench(task=MARKING_TASK))
    (pytester.path / "store.sqlite3").write_bytes(b"garbage " * 300)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-store", "store.sqlite3", "-n", "2"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --bench-store: *file is not a database*"])
    assert not (pytester.path / "ran").exists()


def _mount_tmpfs(path: Path, options: str) -> bool:
    """Mount a tmpfs (root only, where the container allows it)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    path.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True
    )
    return done.returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", str(path)], capture_output=True)


@pytest.mark.slow
def test_read_only_store_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(task=MARKING_TASK))
    directory = pytester.path / "ro"
    if os.geteuid() == 0:
        # root writes through file modes: a read-only file system is the real case.
        if not _mount_tmpfs(directory, "size=1m"):
            pytest.skip("cannot mount a tmpfs here")
        try:
            ResultStore(directory / "s.sqlite3").close()
            subprocess.run(["mount", "-o", "remount,ro", str(directory)], check=True)
            result = pytester.runpytest_inprocess(
                "--bench", "--bench-dry-run", "--bench-store", str(directory / "s.sqlite3")
            )
        finally:
            _umount(directory)
    else:
        directory.mkdir()
        ResultStore(directory / "s.sqlite3").close()
        (directory / "s.sqlite3").chmod(0o444)
        result = pytester.runpytest_inprocess(
            "--bench", "--bench-dry-run", "--bench-store", str(directory / "s.sqlite3")
        )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --bench-store: *read-only*"])
    assert not (pytester.path / "ran").exists()


#: Every iteration logs 300 KB, so every record grows the store, and two fill a group of the
#: store's journal: its commit (which fails) comes while the session still runs.
BIG_LOGS = bench(
    'participants=[Participant("p1")], iterations=6',
    """
    @define_task
    def task(task_index, measure, log):
        log("x" * 300_000)
        measure(value=task_index)
    """,
)
#: 16 KB per iteration: the whole run fits one group, first committed at the session end.
SMALLER_LOGS = BIG_LOGS.replace('"x" * 300_000', '"x" * 16_000')

#: After the first record, the store may not grow any more: SQLite's own "database or disk
#: is full" (SQLITE_FULL), as on a full disk.
FULL_AFTER_FIRST = """
def pytest_benchsdk_record(config, benchmark, participant, record):
    store = config.pluginmanager.get_plugin("benchsdk-controller").store
    conn = store._db._conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
"""


def _check_full_store_session(result: pytest.RunResult, path: Path) -> None:
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*benchsdk: ERROR the results store * failed: *full*", "*= benchmarks =*"]
    )
    (run,) = stored_runs(path)
    assert run.status == "interrupted"
    assert run.record_count >= 1  # what was committed stays
    assert run.record_count < 6


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "xdist"])
def test_store_filling_up_mid_run_stops_the_session(pytester: pytest.Pytester, xdist: bool) -> None:
    pytester.makepyfile(bench_x=BIG_LOGS)
    pytester.makeconftest(FULL_AFTER_FIRST)
    if xdist:
        pytest.importorskip("xdist")
        result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-n", "1")
    else:
        result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    _check_full_store_session(result, store_path(pytester))


def test_a_group_that_cannot_commit_at_the_session_end_fails_the_store(
    pytester: pytest.Pytester,
) -> None:
    # Nothing commits while the run lasts (one quiet group): the session end's commit meets
    # the full store, and the session says so as it does mid-run, never "passed".
    pytester.makepyfile(bench_x=SMALLER_LOGS)
    pytester.makeconftest(FULL_AFTER_FIRST)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*benchsdk: ERROR the results store * failed: *full*", "*= benchmarks =*"]
    )
    # The next open of the store commits what the journal kept: nothing is lost.
    (run,) = stored_runs(store_path(pytester))
    assert run.status == "interrupted"
    assert run.record_count == 6


def test_store_on_a_full_disk_stops_the_session(pytester: pytest.Pytester) -> None:
    directory = pytester.path / "small"
    if not _mount_tmpfs(directory, "size=192k"):
        pytest.skip("cannot mount a small tmpfs here (root only)")
    try:
        pytester.makepyfile(
            bench_x=BIG_LOGS.replace("iterations=6", "iterations=40").replace(
                '"x" * 300_000', '"x" * 8_000'
            )
        )
        result = pytester.runpytest_inprocess(
            "--bench", "--bench-dry-run", "--bench-store", str(directory / "s.sqlite3")
        )
        saved = pytester.path / "saved.sqlite3"
        shutil.copy(directory / "s.sqlite3", saved)
        for suffix in ("-wal", "-shm"):
            if (directory / f"s.sqlite3{suffix}").exists():
                shutil.copy(directory / f"s.sqlite3{suffix}", f"{saved}{suffix}")
        # Records accepted but not committed when the disk filled up stay in the journal:
        # the next open of the store (here: of its copy) commits them.
        for journal in directory.glob("s.sqlite3-journal-*"):
            shutil.copy(journal, pytester.path / journal.name.replace("s.", "saved.", 1))
    finally:
        _umount(directory)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    # SQLite's commit or the journal's append meets the full disk first, whichever comes.
    result.stdout.re_match_lines(
        [r".*benchsdk: ERROR the results store .* failed: .*(full|No space left on device)"]
    )
    (run,) = stored_runs(saved)
    assert run.status == "interrupted"
    assert 1 <= run.record_count < 40


# -- 8. the stored run status tells the truth -------------------------------------------------


def test_setup_error_is_not_passed(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(autouse=True)
        def broken(request):
            if request.node.name.endswith("-1]"):
                raise RuntimeError("setup broke")
        """
    )
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=2'))
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=1, errors=1)
    assert _statuses(pytester) == {"demo": "failed"}


def test_base_exception_in_the_task_is_not_passed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=2',
            "@define_task\ndef task(task_index):\n"
            "    if task_index:\n        raise SystemExit(3)\n",
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(passed=1, failed=1)
    assert _statuses(pytester) == {"demo": "failed"}


def test_internal_error_is_not_passed(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_runtest_logfinish(nodeid, location):
            if nodeid.endswith("-1]"):
                raise RuntimeError("internal trouble")
        """
    )
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=3'))
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    assert _statuses(pytester) == {"demo": "interrupted"}


def test_a_failing_sessionfinish_elsewhere_leaves_no_run_running(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(session):
            raise RuntimeError("another plugin broke")
        """
    )
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=2'))
    pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert _statuses(pytester) == {"demo": "interrupted"}


@pytest.mark.slow
def test_xdist_worker_crash_is_not_passed(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2")], iterations=2',
            """
            import os

            @define_task
            def task(participant, task_index, measure):
                if participant.name == "p2" and task_index == 1:
                    os._exit(1)
                measure(value=task_index)
            """,
        )
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*crashed*"])
    assert _statuses(pytester) == {"demo": "failed"}


# -- 9. secrets participants require are never written ----------------------------------------

SECRET = "sk-live-0123456789abcdef"

SECRET_BENCH = bench(
    'participants=[Participant("p", required_env_vars=["PSECRET"], '
    'token=os.environ["PSECRET"])], iterations=2',
    """
    @define_task
    def task(participant, task_index, measure, log):
        token = participant.token
        print("token is", token)
        log(f"calling with {token}", {"auth": token})
        measure(value=task_index, note=f"t={token}")
        if task_index == 1:
            raise RuntimeError(f"401 for key {token}")
        assert token == "something else"
    """,
    prelude="import os\n",
)


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "xdist"])
def test_secrets_are_redacted_everywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: bool
) -> None:
    if xdist:
        pytest.importorskip("xdist")
    monkeypatch.setenv("PSECRET", SECRET)
    pytester.makepyfile(bench_x=SECRET_BENCH)
    out = pytester.path / "run.json"
    junit = pytester.path / "junit.xml"
    args = ["--bench", "--bench-dry-run", "--bench-json", str(out), "--junitxml", str(junit)]
    args += ["-l", "-rA", "-vv", "-p", "no:cacheprovider"]
    if xdist:
        args += ["-n", "2"]
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(failed=2)
    text = result.stdout.str() + result.stderr.str()
    assert SECRET not in text
    assert "***" in text
    assert SECRET not in junit.read_text()
    assert SECRET not in out.read_text()
    assert "t=***" in out.read_text()
    # The store: records and log lines (read back, and the raw bytes of every file).
    path = store_path(pytester)
    with ResultStore(path) as store:
        (run,) = store.list_runs()
        records = store.participant_records(run.run_id)
        logs = store.log_lines(run.run_id, "p")
    assert SECRET not in json.dumps([r.to_wire() for pr in records for r in pr.records])
    assert logs
    assert all(SECRET not in line for line in logs)
    assert any("calling with ***" in line for line in logs)
    for file in path.parent.iterdir():
        assert SECRET.encode() not in file.read_bytes()


def test_short_values_are_not_redacted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 5-character value would garble every record: only values of 6+ characters count.
    monkeypatch.setenv("PSHORT", "abcde")
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p", required_env_vars=["PSHORT"])], iterations=1',
            "@define_task\ndef task(measure):\n    measure(value=1, word='abcde')\n",
        )
    )
    out = pytester.path / "run.json"
    pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-json", str(out))
    assert "abcde" in out.read_text()


# -- 10. the store is readable by its owner only ---------------------------------------------


def test_store_file_and_directory_are_owner_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-store", "a/b/s.sqlite3")
    target = pytester.path / "a" / "b" / "s.sqlite3"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((pytester.path / "a").stat().st_mode) == 0o700
    for sibling in target.parent.iterdir():  # -wal / -shm take the store's mode
        assert stat.S_IMODE(sibling.stat().st_mode) & 0o077 == 0


def test_existing_store_directory_is_left_as_it_is(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    directory = pytester.path / ".benchmarks"
    directory.mkdir()
    directory.chmod(0o755)
    pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755
    assert stat.S_IMODE(store_path(pytester).stat().st_mode) == 0o600


# -- 13. a malformed base URL and the delivery wait ------------------------------------------


@pytest.mark.parametrize("url", ["notaurl", "ftp://host", "https://", "http://host:port"])
def test_malformed_base_url_is_a_usage_error(pytester: pytest.Pytester, url: str) -> None:
    pytester.makepyfile(bench_x=bench(task=MARKING_TASK))
    result = pytester.runpytest_inprocess("--bench", "--bench-base-url", url)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --bench-base-url *"])
    assert not (pytester.path / "ran").exists()


def test_upload_timeout_option_and_ini(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--bench-upload-timeout", "2.5")
    assert BenchOptions.from_config(config).upload_timeout_s == 2.5
    assert BenchOptions.from_config(pytester.parseconfig()).upload_timeout_s == 30
    pytester.makeini("[pytest]\nbench_upload_timeout = 7\n")
    assert BenchOptions.from_config(pytester.parseconfig()).upload_timeout_s == 7
    with pytest.raises(pytest.UsageError, match="--bench-upload-timeout expects a number >= 0"):
        BenchOptions.from_config(pytester.parseconfig("--bench-upload-timeout", "-1"))


# -- 16. --bench-json is strict JSON ----------------------------------------------------------


def test_bench_json_writes_nan_and_infinity_as_null(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1")], iterations=1',
            "@define_task\ndef task(measure):\n"
            "    measure(nan=float('nan'), inf=float('inf'), ninf=float('-inf'), ok=1.5)\n",
        )
    )
    out = pytester.path / "run.json"
    pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-json", str(out))
    doc = _strict_json(out)
    (record,) = doc["benchmarks"][0]["participants"][0]["records"]
    assert record["data"] == {
        "nan": None,
        "inf": None,
        "ninf": None,
        "ok": 1.5,
        "cpu_ms": record["data"]["cpu_ms"],
    }
    assert read_json(out) == doc


# -- against the loopback platform -----------------------------------------------------------


@pytest.mark.slow
def test_a_failing_on_complete_still_delivers_everything(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.e2e import E2E_BENCH, assert_delivered, bench_args, use_platform
    from helpers.platform_server import LoopbackPlatform

    with LoopbackPlatform(tokens=(API_KEY,)) as server:
        use_platform(monkeypatch)
        pytester.makepyfile(
            bench_x=E2E_BENCH,
            bench_y=bench(
                'participants=[Participant("p1")], iterations=2,\non_complete=on_complete',
                prelude="def on_complete(outcome):\n    raise SystemExit(4)\n",
                slug="broken",
            ),
        )
        result = pytester.runpytest_inprocess(*bench_args(server))
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        text = result.stdout.str() + result.stderr.str()
        assert "INTERNALERROR" not in text
        assert "closed database" not in text
        result.stdout.fnmatch_lines(["  ERROR on_complete failed: SystemExit: 4"])
        assert_delivered(server, pytester)  # also: nothing left pending in the outbox
        assert _statuses(pytester) == {"demo": "passed", "broken": "failed"}


def test_secrets_never_reach_the_platform(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.e2e import bench_args, use_platform
    from helpers.platform_server import LoopbackPlatform, iter_lines

    with LoopbackPlatform(tokens=(API_KEY,)) as server:
        use_platform(monkeypatch)
        monkeypatch.setenv("PSECRET", SECRET)
        pytester.makepyfile(bench_x=SECRET_BENCH)
        result = pytester.runpytest_inprocess(*bench_args(server))
        result.assert_outcomes(failed=2)
        bodies = [call.body for call in server.calls()]
        assert bodies
        assert all(SECRET.encode() not in body for body in bodies)
        records = [record for _, record in server.records()]
        assert len(records) == 2
        assert SECRET not in json.dumps(records)
        artifacts = server.uploaded_artifacts()
        assert artifacts
        for artifact in artifacts:
            assert all(SECRET not in line for line in iter_lines(artifact["content"]))
