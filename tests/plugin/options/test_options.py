"""Every command-line / ini / env option of the plugin, with upstream's knob rules and messages."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, read_json, store_path, stored_runs

# The task records which knobs it saw, so each option's effect is visible in the records.
ECHO_TASK = """
@define_task
def task(bench, measure):
    measure(participant=bench.participant.name, phase_seen=bench.phase,
            args=dict(bench.args))
"""


def _ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::task[" in line]


def _run_json(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess("--bench", "--bench-json", str(out), *args)
    return result, read_json(out)


# -- --bench-provider ------------------------------------------------------------------------

THREE = 'participants=[Participant("a"), Participant("b"), Participant("c")], iterations=1'


def test_provider_comma_list_keeps_declared_order(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(THREE))
    result = pytester.runpytest_inprocess(
        "--bench", "--collect-only", "-q", "--bench-provider", " c , a ,"
    )
    assert _ids(result) == ["bench_x.py::task[a-0]", "bench_x.py::task[c-0]"]


def test_default_providers_apply_without_provider_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(THREE + ', default_providers=["b"]'))
    result = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    assert _ids(result) == ["bench_x.py::task[b-0]"]
    # --bench-provider wins over default_providers
    result = pytester.runpytest_inprocess("--bench", "--collect-only", "-q", "--bench-provider=a")
    assert _ids(result) == ["bench_x.py::task[a-0]"]


# -- dry run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--bench-dry-run", "--bench-no-ingest"])
def test_dry_run_flags(pytester: pytest.Pytester, flag: str) -> None:
    pytester.makepyfile(bench_x=bench())
    result, doc = _run_json(pytester, flag)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["benchsdk: Dry run: no platform ingest or reporting."])
    assert doc["dryRun"] is True
    (run,) = stored_runs(store_path(pytester))
    assert run.dry_run is True


def test_dry_run_without_a_store_writes_nothing(pytester: pytest.Pytester) -> None:
    # No store and no platform: the run is scored and printed, and no file is left behind.
    pytester.makepyfile(bench_x=bench(config='participants=[Participant("p1")], iterations=2'))
    before = set(pytester.path.rglob("*"))
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-no-store", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)
    assert result.stdout.lines.count("benchsdk: Dry run: no platform ingest or reporting.") == 1
    assert "Results stored in" not in result.stdout.str()
    created = {p for p in set(pytester.path.rglob("*")) - before if "__pycache__" not in p.parts}
    assert created == set()


# Every spelling the environment may use is read in test_parsed_options.py.
@pytest.mark.parametrize(("value", "dry"), [("1", True), ("0", False)])
def test_dry_run_env(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str, dry: bool
) -> None:
    monkeypatch.setenv("BENCHSDK_NO_INGEST", value)
    pytester.makepyfile(bench_x=bench())
    result, doc = _run_json(pytester)
    result.assert_outcomes(passed=4)
    assert doc["dryRun"] is dry
    assert ("Dry run: no platform ingest" in result.stdout.str()) is dry


# -- knobs -----------------------------------------------------------------------------------


def test_iterations_override(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-iterations", "3")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        ["  Knobs: iterations=3, concurrency=1, staggerDelayMs=0, groupBy=participant"]
    )


def test_iterations_default_to_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")]'))
    result = pytester.runpytest_inprocess("--bench", "--collect-only", "-q")
    assert _ids(result) == ["bench_x.py::task[p1-0]"]


def test_iterations_with_even_phases_sizes_each_phase(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("p")], phases=[Phase("a", 1), Phase("b", 1)]')
    )
    result, doc = _run_json(pytester, "--bench-dry-run", "--bench-iterations=2")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["  Knobs: iterations=4, *"])
    config = doc["benchmarks"][0]["config"]
    assert config["phaseIterations"] == 2
    assert config["phases"] == [{"name": "a", "iterations": 2}, {"name": "b", "iterations": 2}]
    collect = pytester.runpytest_inprocess(
        "--bench", "--collect-only", "-q", "--bench-iterations=2"
    )
    assert _ids(collect) == [
        "bench_x.py::task[p-a-0]",
        "bench_x.py::task[p-a-1]",
        "bench_x.py::task[p-b-2]",
        "bench_x.py::task[p-b-3]",
    ]


def test_iterations_with_uneven_phases_is_ignored_with_warning(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("p")], phases=[Phase("a", 1), Phase("b", 2)]')
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-iterations=5")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["  --bench-iterations is ignored because this benchmark sizes its phases individually."]
    )


def test_concurrency_stagger_group_by_reach_knobs_and_snapshot(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result, doc = _run_json(
        pytester,
        "--bench-dry-run",
        "--bench-concurrency=2",
        "--bench-stagger-delay-ms=1.5",
        "--bench-group-by=round",
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["  Knobs: iterations=2, concurrency=2, staggerDelayMs=1.5, groupBy=round"]
    )
    config = doc["benchmarks"][0]["config"]
    assert (config["concurrency"], config["staggerDelayMs"], config["groupBy"]) == (2, 1.5, "round")
    (run,) = stored_runs(store_path(pytester))
    assert run.knobs == {
        "iterations": 2,
        "concurrency": 2,
        "staggerDelayMs": 1.5,
        "groupBy": "round",
    }


def test_config_knobs_are_defaults_cli_wins(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p")], iterations=3, concurrency=3, stagger_delay_ms=2, '
            'group_by="round"'
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.stdout.fnmatch_lines(
        ["  Knobs: iterations=3, concurrency=3, staggerDelayMs=2, groupBy=round"]
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-concurrency=1", "--bench-group-by=participant"
    )
    result.stdout.fnmatch_lines(
        ["  Knobs: iterations=3, concurrency=1, staggerDelayMs=2, groupBy=participant"]
    )


def test_group_by_option_changes_item_order(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess(
        "--bench", "--collect-only", "-q", "--bench-group-by", "round"
    )
    assert _ids(result) == [
        "bench_x.py::task[p1-0]",
        "bench_x.py::task[p2-0]",
        "bench_x.py::task[p1-1]",
        "bench_x.py::task[p2-1]",
    ]


def test_a_bad_option_value_stops_the_session_with_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    # Each bad value's message: test_parsed_options.py.
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-iterations=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert 'ERROR: --bench-iterations expects an integer >= 1 (got "0")' in result.stderr.lines


# -- shapes and identity ---------------------------------------------------------------------

SHAPED = (
    'participants=[Participant("p")], stagger_delay_ms=1,\n'
    'shapes={"burst": Shape("demo-burst", "Demo burst", stagger_delay_ms=7), '
    '"plain": Shape("demo-plain")}'
)


def test_shape_sets_slug_name_and_stagger(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(SHAPED))
    result, doc = _run_json(pytester, "--bench-dry-run", "--bench-shape", "burst")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["benchsdk: Demo burst [bench_x.py]", "  Knobs: *staggerDelayMs=7*"]
    )
    run = doc["benchmarks"][0]
    assert (run["benchmarkSlug"], run["benchmarkName"]) == ("demo-burst", "Demo burst")
    (stored,) = stored_runs(store_path(pytester))
    assert (stored.benchmark_slug, stored.benchmark_name) == ("demo-burst", "Demo burst")


def test_shape_without_name_uses_slug_and_cli_stagger_wins(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(SHAPED))
    result, doc = _run_json(
        pytester, "--bench-dry-run", "--bench-shape=plain", "--bench-stagger-delay-ms=3"
    )
    result.stdout.fnmatch_lines(["  Knobs: *staggerDelayMs=3*"])
    run = doc["benchmarks"][0]
    assert (run["benchmarkSlug"], run["benchmarkName"]) == ("demo-plain", "demo-plain")


def test_benchmark_and_name_override_shape(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench(SHAPED))
    _, doc = _run_json(
        pytester,
        "--bench-dry-run",
        "--bench-shape=burst",
        "--bench-benchmark=other-slug",
        "--bench-name",
        "Other name",
    )
    run = doc["benchmarks"][0]
    assert (run["benchmarkSlug"], run["benchmarkName"]) == ("other-slug", "Other name")
    assert run["config"]["benchmarkSlug"] == "other-slug"


def test_benchmark_and_name_from_env(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHMARK_SLUG", "env-slug")
    monkeypatch.setenv("BENCHMARK_NAME", "Env name")
    pytester.makepyfile(bench_x=bench())
    _, doc = _run_json(pytester, "--bench-dry-run")
    run = doc["benchmarks"][0]
    assert (run["benchmarkSlug"], run["benchmarkName"]) == ("env-slug", "Env name")
    # explicit options win over the environment
    _, doc = _run_json(pytester, "--bench-dry-run", "--bench-benchmark=cli-slug", "--bench-name=C")
    run = doc["benchmarks"][0]
    assert (run["benchmarkSlug"], run["benchmarkName"]) == ("cli-slug", "C")


def test_run_key_is_accepted_in_dry_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-run-key", "ci-42")
    result.assert_outcomes(passed=4)


# -- --bench-arg -----------------------------------------------------------------------------


def test_bench_arg_values_reach_the_task(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p")], custom_cli_flags=["--region", "--size"]',
            ECHO_TASK,
        )
    )
    _, doc = _run_json(
        pytester, "--bench-dry-run", "--bench-arg", "region=eu-west=1", "--bench-arg=--size="
    )
    (record,) = doc["benchmarks"][0]["participants"][0]["records"]
    assert record["data"]["args"] == {"region": "eu-west=1", "size": ""}


def test_bench_arg_only_reaches_files_declaring_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("p")], custom_cli_flags=["--region"]', ECHO_TASK),
        bench_y=bench('participants=[Participant("q")]', ECHO_TASK, slug="other"),
    )
    _, doc = _run_json(pytester, "--bench-dry-run", "--bench-arg", "region=us")
    args = {
        b["file"]: b["participants"][0]["records"][0]["data"]["args"] for b in doc["benchmarks"]
    }
    assert args == {"bench_x.py": {"region": "us"}, "bench_y.py": {}}


def test_undeclared_bench_arg_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_x=bench('participants=[Participant("p")], custom_cli_flags=["--region", "--az"]')
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-arg", "zone=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ERROR: --bench-arg zone: not declared in any collected bench file's custom_cli_flags "
        "(declared: --az, --region)" in result.stderr.lines
    )


# -- store and json paths --------------------------------------------------------------------


def test_default_store_location(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.stdout.fnmatch_lines([f"Results stored in {store_path(pytester)}"])
    assert len(stored_runs(store_path(pytester))) == 1


def test_store_option_path(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-store=out/r.db")
    target = pytester.path / "out" / "r.db"
    result.stdout.fnmatch_lines([f"Results stored in {target}"])
    assert len(stored_runs(target)) == 1
    assert not store_path(pytester).exists()


def test_no_store(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-no-store", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=4)
    assert "Results stored in" not in result.stdout.str()
    assert not store_path(pytester).exists()


def test_json_option_path_is_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-no-store", "--bench-json", "sub/dir/run.json"
    )
    target = pytester.path / "sub" / "dir" / "run.json"
    result.stdout.fnmatch_lines([f"Results written to {target}"])
    assert read_json(target)["benchmarks"][0]["localRunId"] is None


def test_options_are_documented_in_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("--help")
    out = result.stdout.str()
    for flag in (
        "--bench ",
        "--bench-provider",
        "--bench-dry-run",
        "--bench-no-ingest",
        "--bench-iterations",
        "--bench-concurrency",
        "--bench-stagger-delay-ms",
        "--bench-group-by",
        "--bench-shape",
        "--bench-benchmark",
        "--bench-name",
        "--bench-run-key",
        "--bench-check",
        "--bench-arg",
        "--bench-json",
        "--bench-store",
        "--bench-no-store",
        "--bench-columns",
        "bench_files",
        "bench_store",
    ):
        assert flag in out, flag


@pytest.mark.slow
def test_dry_run_does_not_import_the_platform_layer(pytester: pytest.Pytester) -> None:
    # A dry run has no platform at all, so it pays nothing for it (httpx, psutil: ~4 MiB).
    pytester.makepyfile(bench_x=bench(config='participants=[Participant("p1")], iterations=1'))
    pytester.makeconftest(
        """
        import sys

        def pytest_unconfigure(config):
            loaded = sorted(m for m in ("httpx", "psutil", "pytest_benchsdk.platform")
                            if m in sys.modules)
            with open("loaded.txt", "w") as f:
                f.write(",".join(loaded))
        """
    )
    result = pytester.runpytest_subprocess("--bench", "--bench-dry-run", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["benchsdk: Dry run: no platform ingest or reporting."])
    assert (pytester.path / "loaded.txt").read_text() == ""
