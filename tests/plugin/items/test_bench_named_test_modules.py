"""Issue 47, item 3: a ``bench_*.py`` module that is no bench file (pytest-benchmark's
``benchmarking/bench_packages.py``) is a test module, with or without ``--bench``; a module
that imports this plugin's authoring API and lacks a config still says what is missing."""

from __future__ import annotations

import pytest

from helpers.sessions import bench

#: The shape of a pytest-benchmark suite's module named like a bench file: test functions,
#: a test class, the ``benchmark`` fixture, a module-level ``config`` dict of its own.
BENCH_NAMED_TESTS = """
import pytest

config = {"size": 3}

def build(n):
    return list(range(n))

def test_build(benchmark):
    assert benchmark(build, config["size"]) == [0, 1, 2]

@pytest.mark.parametrize("n", [1, 2])
def test_build_sizes(benchmark, n):
    assert len(benchmark(build, n)) == n

class TestPackages:
    def test_plain(self):
        assert build(2) == [0, 1]
"""


def _suite(pytester: pytest.Pytester, ini: str = "python_files = bench_*.py test_*.py\n") -> None:
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.mkpydir("benchmarking")
    (pytester.path / "benchmarking" / "bench_packages.py").write_text(BENCH_NAMED_TESTS)


def test_without_bench_its_tests_run_and_no_hint_calls_it_a_bench_file(
    pytester: pytest.Pytester,
) -> None:
    _suite(pytester)
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    result.assert_outcomes(passed=4)
    assert "not collected" not in result.stdout.str()
    assert "define_benchmark_config" not in result.stdout.str()


def test_with_bench_its_tests_run_and_are_measured(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "-p", "no:randomly")
    result.assert_outcomes(passed=4)
    assert "define_benchmark_config" not in result.stdout.str()
    # The benchmarked tests are measured: each is a participant of its group's benchmark.
    result.stdout.fnmatch_lines(["*test_build_sizes[[]1[]]*"])
    assert result.ret == 0


def test_named_on_the_command_line_its_tests_run(pytester: pytest.Pytester) -> None:
    # Naming a bench_*.py file implies --bench: it is still collected as the test module it is.
    _suite(pytester, ini="")
    result = pytester.runpytest_inprocess(
        "benchmarking/bench_packages.py", "--bench-no-store", "--collect-only", "-q"
    )
    result.stdout.fnmatch_lines(
        [
            "benchmarking/bench_packages.py::test_build",
            "benchmarking/bench_packages.py::test_build_sizes[[]1[]]",
            "benchmarking/bench_packages.py::test_build_sizes[[]2[]]",
            "benchmarking/bench_packages.py::TestPackages::test_plain",
        ]
    )
    assert result.ret == 0


def test_one_pytest_would_not_collect_is_left_alone_beside_a_bench_file(
    pytester: pytest.Pytester,
) -> None:
    # Not in python_files, not named: pytest would not collect it, and neither does --bench;
    # the real bench file beside it runs.
    _suite(pytester, ini="")
    pytester.makepyfile(bench_real=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store")
    result.assert_outcomes(passed=4)  # bench_real's 2 participants x 2 iterations
    assert "bench_packages" not in result.stdout.str()


def test_a_module_importing_the_authoring_api_without_config_is_still_an_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x="from pytest_benchsdk import define_task\n\n"
        "@define_task\ndef task():\n    pass\n\ndef test_not_collected():\n    pass\n"
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*bench_x.py must export a `config` created with define_benchmark_config*"]
    )
