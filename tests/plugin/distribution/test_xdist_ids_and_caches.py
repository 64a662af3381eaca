"""Under pytest-xdist bench items keep the ids they have without it: in the summary, junitxml and
pytest's caches (so ``--lf`` / ``--ff`` / ``--sw`` select the right items), and a pasted id runs
its item, with or without the ``@group`` xdist's loadgroup gave ids in older releases. ``-n``
without ``--dist`` applies ``--dist loadgroup`` where a bench file needs it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers.sessions import bench

pytest.importorskip("xdist")

#: p2 fails its iteration 1 when BOOM is set; p1's threshold fails when SLOW is set. With
#: concurrency 2, warm-up and thresholds it needs one process per participant.
SOURCE = bench(
    'participants=["p1", "p2"], iterations=3, concurrency=2, warmup=1,\n'
    'thresholds={"value": "max < 50"}',
    """
    import os

    @define_task
    def task(participant, task_index, measure):
        if participant.name == "p2" and task_index == 1 and os.environ.get("BOOM"):
            raise RuntimeError("boom")
        slow = participant.name == "p1" and os.environ.get("SLOW")
        measure(value=90 if slow else 10 + task_index)
    """,
)


def _session(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "xdist", "--bench", "--bench-dry-run", *args)


def _junit(path: Path) -> list[tuple[str | None, str | None, str]]:
    """(classname, name, outcome) of every testcase, sorted."""
    cases = []
    for case in ET.parse(path).iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "skipped")), "ok")
        cases.append((case.get("classname"), case.get("name"), outcome))
    return sorted(cases, key=lambda case: (str(case[0]), str(case[1])))


def _lastfailed(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed"
    return sorted(json.loads(path.read_text())) if path.exists() else []


def _ran(result: pytest.RunResult) -> list[str]:
    """The node ids of the items that ran, from ``-rA``'s short summary."""
    ids = []
    for line in result.outlines:
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "SKIPPED", "ERROR") and "::" in rest:
            ids.append(rest.split(" - ")[0].strip())
    return sorted(ids)


@pytest.mark.slow
def test_ids_in_the_summary_junitxml_and_lastfailed_equal_those_without_xdist(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOOM", "1")
    monkeypatch.setenv("SLOW", "1")
    pytester.makepyfile(bench_x=SOURCE)
    serial = _session(pytester, "-n", "0", "-rA", "--junitxml", "serial.xml")
    serial.assert_outcomes(passed=8, failed=2)
    serial_failed = _lastfailed(pytester)
    assert serial_failed == [
        "bench_x.py::task[p2-1]",
        "bench_x.py::threshold[p1-value-max<50]",
    ]

    parallel = _session(pytester, "-n", "2", "-rA", "--junitxml", "parallel.xml")
    parallel.assert_outcomes(passed=8, failed=2)
    assert "]@" not in parallel.stdout.str()
    assert _ran(parallel) == _ran(serial)
    assert "bench_x.py::task[p2-1]" in _ran(parallel)
    assert _junit(pytester.path / "parallel.xml") == _junit(pytester.path / "serial.xml")
    assert ("bench_x", "warmup[p1-0]", "ok") in _junit(pytester.path / "parallel.xml")
    assert _lastfailed(pytester) == serial_failed


@pytest.mark.slow
def test_n_without_dist_applies_loadgroup_and_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=SOURCE, bench_plain=bench('participants=["q1"], iterations=2'))
    result = _session(pytester, "-n", "2", "-v")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(
        [
            "benchsdk: -n without --dist: running with --dist loadgroup, so each participant's "
            "items stay in one worker: bench_x.py (concurrency 2, thresholds, warm-up)",
        ]
    )
    # A file that needs no grouping is not named.
    assert "bench_plain.py (" not in result.stdout.str()
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        if line.startswith("[gw") and "PASSED" in line and "bench_x.py::" in line:
            participant = line.split("bench_x.py::", 1)[1].split("[", 1)[1].split("-", 1)[0]
            workers.setdefault(participant, set()).add(line.split("]", 1)[0])
    assert set(workers) == {"p1", "p2"}
    assert all(len(found) == 1 for found in workers.values()), workers


@pytest.mark.slow
def test_an_explicit_other_dist_is_an_error_naming_the_reason(pytester: pytest.Pytester) -> None:
    # One session for every reason; that loadfile and loadscope keep a file's items together
    # (no error) is decided on fake nodes in test_scheduling.py.
    pytester.makepyfile(
        bench_t=bench('participants=["p1"], iterations=2, thresholds={"value": "max < 50"}'),
        bench_w=bench('participants=["p1"], iterations=2, warmup=1'),
        bench_c=bench('participants=["p1"], iterations=2, concurrency=2'),
    )
    result = _session(pytester, "-n", "2", "--dist", "load")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*bench_t.py: thresholds judge a participant's iterations in the process that ran "
            "them, so a participant's items must stay on one xdist worker: run with --dist "
            "loadgroup (or give -n without --dist, which applies it).",
        ]
    )
    result.stdout.fnmatch_lines(["*bench_w.py: warm-up iterations warm the process that runs*"])
    result.stdout.fnmatch_lines(
        [
            "*bench_c.py: concurrency 2 runs a participant's iterations together, so they must "
            "stay on one xdist worker: run with --dist loadgroup, or use "
            "--bench-concurrency 1."
        ]
    )


@pytest.mark.parametrize(
    "suffix",
    [
        "@bench_x.py:p2",  # what this release would tag it with
        "@bench_x.py::p2]",  # an older release's output under pytest 9.2 (stray "]")
        "@bench_x.py::p2",  # an older release's output
    ],
)
def test_a_pasted_id_with_its_group_runs_that_item(pytester: pytest.Pytester, suffix: str) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    result = pytester.runpytest_inprocess(
        f"bench_x.py::task[p2-2]{suffix}", "--bench-dry-run", "-rA"
    )
    result.assert_outcomes(passed=2)
    assert _ran(result) == ["bench_x.py::task[p2-2]", "bench_x.py::warmup[p2-0]"]


@pytest.mark.slow
def test_a_participant_whose_name_has_brackets_and_at_signs(pytester: pytest.Pytester) -> None:
    # "]@" inside a name is part of the name, not a group; under xdist the group holds.
    pytester.makepyfile(bench_x=bench('participants=["a]@b", "c@d"], iterations=2, warmup=1'))
    pasted = pytester.runpytest_inprocess("bench_x.py::task[a]@b-1]", "--bench-dry-run", "-rA")
    assert _ran(pasted) == ["bench_x.py::task[a]@b-1]", "bench_x.py::warmup[a]@b-0]"]
    result = _session(pytester, "-n", "2", "-v")
    result.assert_outcomes(passed=6)
    workers = {
        line.split("]", 1)[0]
        for line in result.outlines
        if line.startswith("[gw") and "[a]@b-" in line
    }
    assert len(workers) == 1, workers


@pytest.mark.slow
def test_lf_under_xdist_reruns_the_failures_with_what_they_need(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    monkeypatch.setenv("SLOW", "1")
    _session(pytester, "-n", "2").assert_outcomes(passed=9, failed=1)
    assert _lastfailed(pytester) == ["bench_x.py::threshold[p1-value-max<50]"]
    monkeypatch.delenv("SLOW")
    rerun = _session(pytester, "-n", "2", "--lf", "-rA")
    # The threshold with the iterations it judges and their warm-up; nothing of p2.
    rerun.assert_outcomes(passed=5)
    assert _ran(rerun) == [
        "bench_x.py::task[p1-0]",
        "bench_x.py::task[p1-1]",
        "bench_x.py::task[p1-2]",
        "bench_x.py::threshold[p1-value-max<50]",
        "bench_x.py::warmup[p1-0]",
    ]
    assert _lastfailed(pytester) == []


def test_a_cache_an_older_release_wrote_under_xdist_still_selects(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    cache = pytester.path / ".pytest_cache" / "v" / "cache"
    cache.mkdir(parents=True)
    (cache / "lastfailed").write_text(json.dumps({"bench_x.py::task[p2-1]@bench_x.py::p2": True}))
    (cache / "stepwise").write_text(
        json.dumps(
            {
                "last_failed": "bench_x.py::task[p2-1]@bench_x.py::p2",
                "last_test_count": None,
                "last_cache_date_str": "2026-01-01T00:00:00",
            }
        )
    )
    lf = pytester.runpytest_inprocess("--bench-dry-run", "--bench", "--lf", "-rA")
    lf.stdout.fnmatch_lines(["run-last-failure: rerun previous 1 failure"])
    # p2's iterations (its threshold judges them all) with warm-up and threshold.
    assert _ran(lf) == [
        "bench_x.py::task[p2-0]",
        "bench_x.py::task[p2-1]",
        "bench_x.py::task[p2-2]",
        "bench_x.py::threshold[p2-value-max<50]",
        "bench_x.py::warmup[p2-0]",
    ]
    (cache / "stepwise").write_text(
        json.dumps(
            {
                "last_failed": "bench_x.py::task[p2-1]@bench_x.py::p2",
                "last_test_count": None,
                "last_cache_date_str": "2026-01-01T00:00:00",
            }
        )
    )
    sw = pytester.runpytest_inprocess("--bench-dry-run", "--bench", "--sw", "-rA")
    sw.stdout.fnmatch_lines(["stepwise: skipping 7 already passed items*"])
    assert not any("p1" in nodeid for nodeid in _ran(sw))


@pytest.mark.slow
def test_a_crashed_workers_item_is_reported_under_its_plain_id(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # xdist reports the item a worker died in under the id its scheduler holds (with the
    # group); the cache and junitxml still get the item's own id.
    pytester.makepyfile(
        bench_x=bench(
            'participants=["a", "b"], iterations=2, warmup=1',
            """
            import os

            @define_task
            def task(participant, task_index):
                if participant.name == "b" and task_index == 1:
                    os._exit(3)
            """,
        )
    )
    result = _session(pytester, "-n", "2", "--max-worker-restart", "0", "--junitxml", "junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*crashed while running 'bench_x.py::task[[]b-1[]]@*"])
    assert _lastfailed(pytester) == ["bench_x.py::task[b-1]"]
    names = {name for _, name, _ in _junit(pytester.path / "junit.xml")}
    assert "task[b-1]" in names
    assert not any("@" in str(name) for name in names)


@pytest.mark.parametrize(
    ("nodeid", "plain"),
    [
        ("bench_x.py::task[p1-0]@bench_x.py:p1", "bench_x.py::task[p1-0]"),
        ("sub/bench_x.py::warmup[p1-0]@sub/bench_x.py:p1", "sub/bench_x.py::warmup[p1-0]"),
        ("bench_x.py::threshold[p1-v-max<5]@bench_x.py::p1]", "bench_x.py::threshold[p1-v-max<5]"),
        ("bench_x.py::task[a%40b-0]@bench_x.py:a%2540b", "bench_x.py::task[a%40b-0]"),
        ("bench_x.py::task[a]@b-0]@bench_x.py:a%5D%40b", "bench_x.py::task[a]@b-0]"),
        # not a group of this file, or not a bench item: unchanged
        ("bench_x.py::task[a]@b-0]", "bench_x.py::task[a]@b-0]"),
        ("bench_x.py::task[p1-0]@other.py:p1", "bench_x.py::task[p1-0]@other.py:p1"),
        ("test_x.py::test_a[1]@bench_x.py:p1", "test_x.py::test_a[1]@bench_x.py:p1"),
        ("bench_x.py", "bench_x.py"),
    ],
)
def test_plain_node_id_strips_only_a_group(nodeid: str, plain: str) -> None:
    from pytest_benchsdk._plugin.distribution.loadgroup import plain_node_id

    assert plain_node_id(nodeid) == plain
