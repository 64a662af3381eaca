"""A newcomer's path: IDE runs of one item, options that imply ``--bench``, the hint
when bench files are left out, and small things in the collection and check output."""

from __future__ import annotations

import json

import pytest

from helpers.sessions import bench, store_path

PHASED = bench(
    'participants=[Participant("p1"), Participant("p2")],\n'
    'phases=[Phase("cold", 1), Phase("warm", 2)]'
)
PLAIN_TEST = "def test_ok():\n    pass\n"
HINT = (
    "benchsdk: 1 bench file(s) not collected (bench_*.py); run with --bench or set "
    "bench = true in the ini"
)


# -- 1. a bench file named on the command line is collected as one ---------------------------


def test_a_node_id_runs_one_item_without_bench(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=PHASED, test_plain=PLAIN_TEST)
    result = pytester.runpytest_inprocess("--bench-no-store", "-v", "bench_x.py::task[p2-warm-1]")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["bench_x.py::task[[]p2-warm-1[]] PASSED*"])
    assert "not found" not in result.stdout.str() + result.stderr.str()


def test_a_named_bench_file_runs_without_bench(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(), bench_y=bench(slug="other"), test_plain=PLAIN_TEST)
    result = pytester.runpytest_inprocess("bench_x.py")
    result.assert_outcomes(passed=4)  # bench_x's 2 participants x 2 iterations, nothing else
    assert store_path(pytester).exists()  # a bench run: stored like one


@pytest.mark.slow
def test_a_named_bench_file_in_a_folder_runs_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.mkpydir("benchmarks")
    (pytester.path / "benchmarks" / "bench_x.py").write_text(bench())
    result = pytester.runpytest_inprocess(
        "-p", "xdist", "-n", "2", "--dist", "loadgroup", "--bench-no-store",
        "benchmarks/bench_x.py::task[p1-1]",
    )  # fmt: skip
    result.assert_outcomes(passed=1)


def test_naming_a_folder_or_a_test_file_implies_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(), test_plain=PLAIN_TEST)
    result = pytester.runpytest_inprocess("test_plain.py", ".")
    result.assert_outcomes(passed=1)
    assert not store_path(pytester).exists()


def test_discovery_without_arguments_needs_the_ini(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--collect-only", "-q")
    assert "task[" not in result.stdout.str()
    pytester.makeini("[pytest]\nbench = true\n")
    result = pytester.runpytest_inprocess("--collect-only", "-q")
    result.stdout.fnmatch_lines(["bench_x.py::task[[]p1-0[]]"])


# -- 2. options that only make sense for benchmarks imply --bench ----------------------------


# Which options imply --bench, each of them: test_parsed_options.py; here what it does.
@pytest.mark.parametrize("args", [("--bench-dry-run",), ("--bench-provider", "p1,p2")])
def test_bench_only_options_imply_bench(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    pytester.makepyfile(bench_x=bench(), test_plain=PLAIN_TEST)
    result = pytester.runpytest_inprocess("--bench-no-store", *args)
    result.assert_outcomes(passed=5)
    assert "not collected" not in result.stdout.str()


def test_bench_json_and_bench_arg_imply_bench(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("p1")], custom_cli_flags=["--size"]')
    )
    result = pytester.runpytest_inprocess(
        "--bench-no-store", "--bench-json", "run.json", "--bench-arg", "size=3"
    )
    result.assert_outcomes(passed=1)
    assert json.loads((pytester.path / "run.json").read_text())


def test_bench_check_implies_bench(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench-check", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(['  "file": "bench_x.py",'])
    assert "no bench files collected" not in result.stdout.str()


def test_options_in_addopts_and_store_options_imply_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naddopts = --bench-dry-run --bench-iterations 3\n")
    pytester.makepyfile(bench_x=bench(), test_plain=PLAIN_TEST)
    result = pytester.runpytest_inprocess("--bench-no-store", "--bench-store", "x.sqlite3")
    result.assert_outcomes(passed=1)
    # whoever sets --bench* options knows about --bench: no hint either
    assert "not collected" not in result.stdout.str()


def test_env_dry_run_implies_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHSDK_NO_INGEST", "1")
    monkeypatch.setenv("PYTEST_ADDOPTS", "--bench-provider=p1")
    pytester.makepyfile(bench_x=bench(), test_plain=PLAIN_TEST)
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_implied_bench_reaches_xdist_workers(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess(
        "-p", "xdist", "-n", "2", "--dist", "loadgroup", "--bench-no-store", "--bench-dry-run"
    )
    result.assert_outcomes(passed=4)


# -- 2. the hint when bench files are left out -----------------------------------------------


def test_a_run_without_bench_says_which_files_it_left_out(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(), test_plain=PLAIN_TEST)
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([HINT])
    assert result.stdout.str().count("benchsdk:") == 1


@pytest.mark.slow
def test_the_hint_counts_files_under_xdist_too(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(bench_x=bench(), bench_y=bench(slug="y"), test_plain=PLAIN_TEST)
    result = pytester.runpytest_inprocess("-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([HINT.replace("1 bench", "2 bench")])


def test_no_hint_without_bench_files_or_under_qq(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain=PLAIN_TEST)
    assert "benchsdk:" not in pytester.runpytest_inprocess().stdout.str()
    pytester.makepyfile(bench_x=bench())
    assert "benchsdk:" not in pytester.runpytest_inprocess("-qq").stdout.str()


@pytest.mark.parametrize("args", [("--bench",), ("--bench-no-store",), ("--bench-store=s",)])
def test_no_hint_with_a_bench_option(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench-no-store", *args)
    assert "not collected" not in result.stdout.str()


# -- 11. small things --------------------------------------------------------------------------


def test_collection_error_banner_comes_after_the_errors(pytester: pytest.Pytester) -> None:
    bad = "from pytest_benchsdk import define_task\n@define_task\ndef task():\n    pass\n"
    pytester.makepyfile(bench_bad=bad, bench_good=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store")
    result.assert_outcomes(passed=4, errors=1)
    out = result.stdout.str()
    banner = (
        "benchsdk: 1 bench file could not be collected (errors above); the 1 other "
        "bench file ran and the session fails."
    )
    assert out.count(banner) == 1
    assert out.index("ERROR collecting bench_bad.py") < out.index(banner)
    assert out.index("bench_good.py ....") < out.index(banner)


def test_collection_error_banner_says_nothing_ran_when_no_other_file(
    pytester: pytest.Pytester,
) -> None:
    # Issue 46: a lone broken bench file was told "the other benchmarks ran" (there were none).
    # (It imports the authoring API: a bench_*.py of nothing of this plugin's is a test module.)
    pytester.makepyfile(
        bench_bad="from pytest_benchsdk import define_task\n\ndef task():\n    pass\n"
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store")
    out = result.stdout.str()
    assert "other benchmarks ran" not in out
    assert (
        "benchsdk: 1 bench file could not be collected (errors above); no other bench file "
        "had items to run, so nothing ran." in out
    )
    assert result.ret != pytest.ExitCode.OK


def test_check_in_a_dry_run_says_the_platform_was_not_checked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench-check", "--bench-dry-run")
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    start = out.index('{\n  "file"')
    report = json.loads(out[start : out.index("\n}", start) + 2])
    assert report["apiOk"] is None
    assert report["envOk"] is True
    result.stdout.fnmatch_lines(
        ['[[]benchsdk[]] Platform connectivity not checked (dry run): "apiOk" is null; *']
    )
    assert "Benchmark check failed" not in out


def test_an_empty_provider_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # Every empty spelling: test_parsed_options.py.
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-no-store", "--bench-provider=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --bench-provider names no participant (got *"])


def test_an_empty_value_next_to_a_name_is_dropped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess(
        "--bench-no-store", "--bench-provider=p2,", "--bench-provider="
    )
    result.assert_outcomes(passed=2)
