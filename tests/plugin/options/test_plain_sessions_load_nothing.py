"""A pytest session that asks nothing of the plugin imports only the option definitions and
the hint: the plugin costs every project that installs it nothing until ``--bench`` (the
figures are in benchmarks/perf_import.py)."""

from __future__ import annotations

import ast

import pytest

from helpers.sessions import bench

#: What a session without any ``--bench*`` option loads of the package.
PLAIN_SESSION_MODULES = [
    "pytest_benchsdk",
    "pytest_benchsdk._base",
    "pytest_benchsdk._base.defaults",
    "pytest_benchsdk._base.files",
    "pytest_benchsdk._plugin",
    "pytest_benchsdk._plugin.benchmark",
    "pytest_benchsdk._plugin.benchmark.fixture",
    "pytest_benchsdk._plugin.benchmark.providers",
    "pytest_benchsdk._plugin.items",
    "pytest_benchsdk._plugin.items.fixtures",
    "pytest_benchsdk._plugin.options",
    "pytest_benchsdk._plugin.options.foreign",
    "pytest_benchsdk._plugin.options.table",
    "pytest_benchsdk.hookspecs",
    "pytest_benchsdk.plugin",
]
# A conftest that says, as the session ends, which of the package's modules were imported.
REPORTER = """
import sys


def pytest_unconfigure(config):
    loaded = sorted(m for m in sys.modules if m.startswith("pytest_benchsdk"))
    print("LOADED", loaded)
"""


def _loaded(result: pytest.RunResult) -> list[str]:
    line = next(line for line in result.stdout.lines if line.startswith("LOADED "))
    loaded: list[str] = ast.literal_eval(line.removeprefix("LOADED "))
    return loaded


@pytest.mark.slow
def test_a_plain_session_imports_only_the_options_and_the_hint(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(REPORTER)
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert _loaded(result) == PLAIN_SESSION_MODULES


@pytest.mark.slow
def test_left_out_bench_files_cost_no_more_than_their_hint(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(REPORTER)
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n", bench_x=bench())
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["benchsdk: 1 bench file(s) not collected*"])
    assert _loaded(result) == PLAIN_SESSION_MODULES


@pytest.mark.slow
def test_a_bench_session_loads_the_engine(pytester: pytest.Pytester) -> None:
    # The other side of the rule, so that the list above cannot pass by loading nothing at all.
    pytester.makeconftest(REPORTER)
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", "--bench-dry-run")
    result.assert_outcomes(passed=4)
    loaded = _loaded(result)
    assert {
        "pytest_benchsdk._plugin.options.settings",
        "pytest_benchsdk._engine.executor",
    } <= set(loaded)


@pytest.mark.slow
def test_a_task_fixture_outside_a_bench_file_still_explains_itself(
    pytester: pytest.Pytester,
) -> None:
    # The fixtures are registered in every session; what they need is imported when asked.
    pytester.makepyfile(test_plain="def test_uses_step(step):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the 'step' fixture is only available to benchmark tasks*"])
