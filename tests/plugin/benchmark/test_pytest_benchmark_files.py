"""A pytest-benchmark suite's conftest hooks and files (issue 47, items 2 and 4): its hooks are
declared, so a conftest implementing them loads (pytest-benchmark need not be installed) and
the machine/commit/JSON hooks shape the run and ``--bench-export pytest-benchmark``; a
pytest-benchmark JSON file is a ``--bench-compare`` baseline, tests matched by ``fullname``;
a gate whose named baseline holds nothing of a benchmark fails the session."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

SUITE = textwrap.dedent(
    """
    import pytest

    pytestmark = pytest.mark.benchmark(max_time=0.001, min_rounds=3)

    def build(n):
        return list(range(n))

    def test_build(benchmark):
        benchmark.extra_info["kind"] = "list"
        benchmark(build, 10)

    @pytest.mark.parametrize("n", [1, 2])
    def test_sizes(benchmark, n):
        benchmark(build, n)
    """
)

#: A conftest written for pytest-benchmark: every hook of its 5.x hookspec.
CONFTEST = textwrap.dedent(
    """
    def pytest_benchmark_scale_unit(config, unit, benchmarks, best, worst, sort):
        return "", 1.0

    def pytest_benchmark_generate_machine_info(config):
        return {"node": "ci-runner", "system": "Linux"}

    def pytest_benchmark_update_machine_info(config, machine_info):
        machine_info["user"] = "ci"

    def pytest_benchmark_update_commit_info(config, commit_info):
        commit_info["message"] = "the change"

    def pytest_benchmark_group_stats(config, benchmarks, group_by):
        return None

    def pytest_benchmark_update_json(config, benchmarks, output_json):
        output_json["tests"] = [b.fullname for b in benchmarks]
        output_json["first_rounds"] = benchmarks[0].stats.rounds

    def pytest_benchmark_compare_machine_info(
        config, benchmarksession, machine_info, compared_benchmark
    ):
        pass
    """
)


def _suite(pytester: pytest.Pytester, conftest: str = CONFTEST) -> None:
    pytester.makeini("[pytest]\npython_files = bench_*.py test_*.py\n")
    pytester.makeconftest(conftest)
    pytester.makepyfile(bench_packages=SUITE)


def test_a_conftest_with_pytest_benchmarks_hooks_loads_without_bench(
    pytester: pytest.Pytester,
) -> None:
    _suite(pytester)
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    result.assert_outcomes(passed=3)
    assert "unknown hook" not in result.stdout.str() + result.stderr.str()


def test_its_hooks_shape_the_runs_info_and_the_pytest_benchmark_file(
    pytester: pytest.Pytester,
) -> None:
    _suite(pytester)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", "--bench-export", "pytest-benchmark:out.json",
        "-p", "no:randomly",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    document = json.loads((pytester.path / "out.json").read_text())
    # generate_machine_info replaced the default, update_machine_info added to it.
    assert document["machine_info"] == {"node": "ci-runner", "system": "Linux", "user": "ci"}
    assert document["commit_info"]["message"] == "the change"
    assert document["commit_info"]["id"]  # pytest-benchmark's default keys, then the hook's
    assert sorted(document["tests"]) == [
        "bench_packages.py::test_build",
        "bench_packages.py::test_sizes[1]",
        "bench_packages.py::test_sizes[2]",
    ]
    assert document["first_rounds"] >= 3
    by_name = {b["fullname"]: b for b in document["benchmarks"]}
    build = by_name["bench_packages.py::test_build"]
    assert (build["name"], build["group"], build["extra_info"]) == (
        "test_build", None, {"kind": "list"}
    )  # fmt: skip
    sizes = by_name["bench_packages.py::test_sizes[2]"]
    assert (sizes["param"], sizes["params"]) == ("2", {"n": 2})
    stats = build["stats"]
    assert stats["rounds"] >= 3
    assert stats["min"] <= stats["median"] <= stats["max"]
    assert len(stats["data"]) == min(stats["rounds"], 1000)


def test_a_hook_that_raises_is_one_session_error(pytester: pytest.Pytester) -> None:
    _suite(
        pytester,
        "def pytest_benchmark_update_machine_info(config, machine_info):\n"
        "    raise RuntimeError('no machine')\n",
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "-p", "no:randomly")
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*pytest_benchmark_*_info hook (conftest.py) raised RuntimeError: no machine*"]
    )
    assert result.ret == 1


def _pytest_benchmark_file(path: Path, entries: dict[str, float], *, data: bool) -> None:
    """A file as pytest-benchmark 5 saves it (``--benchmark-save``: no ``data`` unless
    ``--benchmark-save-data``), each test's rounds around ``entries[fullname]`` seconds."""
    benchmarks: list[dict[str, Any]] = []
    for fullname, seconds in entries.items():
        rounds = [seconds * f for f in (1.0, 1.02, 0.98, 1.01, 0.99)]
        stats: dict[str, Any] = {
            "min": min(rounds), "max": max(rounds), "mean": seconds,
            "stddev": seconds * 0.015, "rounds": 5, "median": seconds, "iqr": seconds * 0.03,
            "q1": seconds * 0.985, "q3": seconds * 1.015, "iqr_outliers": 0,
            "stddev_outliers": 2, "outliers": "2;0", "ld15iqr": min(rounds),
            "hd15iqr": max(rounds), "ops": 1 / seconds, "total": seconds * 5,
            "iterations": 1,
        }  # fmt: skip
        if data:
            stats["data"] = rounds
        name = fullname.partition("::")[2]
        benchmarks.append(
            {
                "group": None, "name": name, "fullname": fullname, "params": None,
                "param": None, "extra_info": {}, "options": {}, "stats": stats,
            }
        )  # fmt: skip
    document = {
        "machine_info": {"node": "elsewhere", "python_version": "3.11.7"},
        "commit_info": {"id": "0" * 40},
        "benchmarks": benchmarks,
        "datetime": "2026-12-01T08:00:00+00:00",
        "version": "5.1.0",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("data", [True, False], ids=["with-data", "saved-without-data"])
def test_a_saved_pytest_benchmark_file_is_a_baseline(pytester: pytest.Pytester, data: bool) -> None:
    _suite(pytester, "")
    # The baseline was 1000 times slower: every test improved, matched by its fullname.
    saved = pytester.path / ".benchmarks" / "Linux-CPython-3.11-64bit" / "0001_base.json"
    _pytest_benchmark_file(
        saved,
        {
            "bench_packages.py::test_build": 1e-3,
            "bench_packages.py::test_sizes[1]": 1e-3,
            "bench_packages.py::test_sizes[2]": 1e-3,
        },
        data=data,
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", f"--bench-compare={saved}",
        "--bench-compare-fail=min:5%", "-p", "no:randomly",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    assert "has no run of benchmark" not in text
    result.stdout.fnmatch_lines(["*Compared with 0001_base.json (pytest-benchmark*"])
    for name in ("test_build", "test_sizes[[]1[]]", "test_sizes[[]2[]]"):
        result.stdout.fnmatch_lines([f"*{name}*time_ms*median*improved*"])
    result.stdout.fnmatch_lines(["*--bench-compare-fail: 0 of 3 expression verdict(s) failed"])
    assert result.ret == 0


def test_a_gate_whose_baseline_has_nothing_of_a_benchmark_fails_the_session(
    pytester: pytest.Pytester,
) -> None:
    _suite(pytester, "")
    other = pytester.path / "other.json"
    _pytest_benchmark_file(other, {"elsewhere.py::test_other": 1e-3}, data=True)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-no-store", f"--bench-compare={other}",
        "--bench-compare-fail=min:5%", "-p", "no:randomly",
    )  # fmt: skip
    result.stdout.fnmatch_lines(
        [
            "*no baseline (--bench-compare-fail): bench-packages: other.json (pytest-benchmark)"
            " has none of this run's participants (tests are matched by fullname or name); the "
            "gate judged nothing*"
        ]
    )
    assert result.ret == 1


@pytest.mark.parametrize("store", [True, False], ids=["store", "no-store"])
def test_a_saved_runs_number_names_it_as_pytest_benchmark_compare_does(
    pytester: pytest.Pytester, store: bool
) -> None:
    from pytest_benchsdk.results._baselines import _pytest_benchmark_machine_id

    _suite(pytester, "")
    folder = pytester.path / ".benchmarks" / _pytest_benchmark_machine_id()
    tests = ("test_build", "test_sizes[1]", "test_sizes[2]")
    for number, seconds in (("0001", 1e-3), ("0002", 2e-3)):
        _pytest_benchmark_file(
            folder / f"{number}_base.json",
            {f"bench_packages.py::{name}": seconds for name in tests},
            data=True,
        )
    args = ["--bench", "--bench-compare=0001", "--bench-compare-fail=min:5%", "-p", "no:randomly"]
    result = pytester.runpytest_inprocess(*args, *([] if store else ["--bench-no-store"]))
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*Compared with 0001_base.json (pytest-benchmark)*"])
    # 0001 (rounds of 0.98–1.02 ms), not 0002 (twice those).
    result.stdout.fnmatch_lines(["*test_build (time_ms) min:5%: 980 → *"])
    assert result.ret == 0
