"""How options are parsed, validated and defaulted, read from the parsed settings
(``BenchOptions.from_config`` of ``pytester.parseconfig``) without running a session: what
implies ``--bench``, each bad value's message, JavaScript number rules, the environment's and
the ini's values, the store's location. The sessions that show what the settings then do are in
``test_options.py`` and ``test_implied_bench_and_hints.py`` (one per rule)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from pytest_benchsdk._plugin.options.settings import BenchOptions


def _options(
    pytester: pytest.Pytester, *args: str, environ: Mapping[str, str] | None = None
) -> BenchOptions:
    return BenchOptions.from_config(pytester.parseconfig(*args), environ=environ or {})


def _refused(
    pytester: pytest.Pytester, *args: str, environ: Mapping[str, str] | None = None
) -> str:
    with pytest.raises(pytest.UsageError) as refused:
        _options(pytester, *args, environ=environ)
    return str(refused.value)


@pytest.mark.parametrize(
    "args",
    [
        ("--bench-dry-run",),
        ("--bench-no-ingest",),
        ("--bench-provider=p1,p2",),
        ("--bench-provider", "p1,p2"),
        ("--bench-iterations", "2"),
        ("--bench-concurrency=1",),
        ("--bench-stagger-delay-ms", "0"),
        ("--bench-group-by", "round"),
        ("--bench-name", "Other"),
        ("--bench-benchmark", "other"),
        ("--bench-run-key", "k1"),
        ("--bench-json", "run.json"),
        ("--bench-arg", "size=3"),
        ("--bench-check",),
    ],
)
def test_an_option_only_benchmarks_use_implies_bench(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    assert _options(pytester, "--bench-no-store", *args).enabled


def test_store_options_addopts_and_the_environment_imply_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not _options(pytester, "--bench-no-store", "--bench-store", "x.sqlite3").enabled
    assert not _options(pytester).enabled
    pytester.makeini("[pytest]\naddopts = --bench-dry-run --bench-iterations 3\n")
    kept = _options(pytester)
    # Taken from addopts (every run stays offline), but no bench session because of it.
    assert not kept.enabled
    assert (kept.dry_run, kept.run_args.iterations) == (True, 3)
    monkeypatch.setenv("PYTEST_ADDOPTS", "--bench-provider=p1")
    assert not _options(pytester).enabled


def test_the_ini_or_the_flag_turns_it_on(pytester: pytest.Pytester) -> None:
    assert _options(pytester, "--bench").enabled
    pytester.makeini("[pytest]\nbench = true\n")
    assert _options(pytester).enabled


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bench-iterations=0"], '--bench-iterations expects an integer >= 1 (got "0")'),
        (["--bench-iterations=1.5"], '--bench-iterations expects an integer >= 1 (got "1.5")'),
        (["--bench-iterations= "], "--bench-iterations expects a value"),
        (["--bench-concurrency=x"], '--bench-concurrency expects an integer >= 1 (got "x")'),
        (
            ["--bench-stagger-delay-ms=-1"],
            '--bench-stagger-delay-ms expects a number >= 0 (got "-1")',
        ),
        (
            ["--bench-group-by=rounds"],
            "--bench-group-by expects 'participant' or 'round' (got \"rounds\")",
        ),
        (
            ["--bench-benchmark=Bad_Slug"],
            '--bench-benchmark expects a lowercase benchmark slug (got "Bad_Slug")',
        ),
        (["--bench-name= "], "--bench-name expects a value"),
        (["--bench-shape="], "--bench-shape expects a value"),
        (["--bench-run-key="], "--bench-run-key expects a value"),
        (["--bench-arg=novalue"], '--bench-arg expects NAME=VALUE (got "novalue")'),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_its_flag(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    assert _refused(pytester, "--bench", *args) == message


@pytest.mark.parametrize("values", [("",), (" , ",), ("", ",")])
def test_an_empty_provider_is_a_usage_error(
    pytester: pytest.Pytester, values: tuple[str, ...]
) -> None:
    args = [f"--bench-provider={value}" for value in values]
    assert _refused(pytester, "--bench", *args).startswith(
        "--bench-provider names no participant (got "
    )


def test_an_empty_value_next_to_a_name_is_dropped(pytester: pytest.Pytester) -> None:
    options = _options(pytester, "--bench-provider=p2,", "--bench-provider=")
    assert options.run_args.providers == ("p2",)


def test_providers_are_a_comma_list_and_repeatable(pytester: pytest.Pytester) -> None:
    assert _options(pytester, "--bench-provider", " c , a ,").run_args.providers == ("c", "a")
    repeated = _options(pytester, "--bench-provider", "c", "--bench-provider=b")
    assert repeated.run_args.providers == ("c", "b")
    assert _options(pytester, "--bench").run_args.providers is None


@pytest.mark.parametrize(("value", "count"), [("0x3", 3), ("2e0", 2), (" 4 ", 4), ("5.0", 5)])
def test_numbers_are_read_as_javascript_reads_them(
    pytester: pytest.Pytester, value: str, count: int
) -> None:
    assert _options(pytester, f"--bench-iterations={value}").run_args.iterations == count


def test_knobs_reach_the_run_arguments(pytester: pytest.Pytester) -> None:
    args = _options(
        pytester,
        "--bench-concurrency=2",
        "--bench-stagger-delay-ms=1.5",
        "--bench-group-by=round",
        "--bench-run-key",
        "ci-42",
        "--bench-dry-run",
    ).run_args
    assert (args.concurrency, args.stagger_delay_ms, args.group_by, args.run_key) == (
        2,
        1.5,
        "round",
        "ci-42",
    )
    assert args.no_ingest


@pytest.mark.parametrize(
    ("value", "dry"), [("1", True), ("TRUE", True), ("true", True), ("0", False), ("", False)]
)
def test_the_environment_can_make_a_dry_run(
    pytester: pytest.Pytester, value: str, dry: bool
) -> None:
    options = _options(pytester, "--bench", environ={"BENCHSDK_NO_INGEST": value})
    assert (options.dry_run, options.run_args.no_ingest) == (dry, dry)


def test_the_benchmark_and_its_name_come_from_the_environment_unless_given(
    pytester: pytest.Pytester,
) -> None:
    env = {"BENCHMARK_SLUG": "env-slug", "BENCHMARK_NAME": "Env name"}
    args = _options(pytester, "--bench", environ=env).run_args
    assert (args.benchmark, args.name) == ("env-slug", "Env name")
    given = _options(pytester, "--bench-benchmark=cli-slug", "--bench-name=C", environ=env).run_args
    assert (given.benchmark, given.name) == ("cli-slug", "C")
    assert _refused(pytester, "--bench", environ={"BENCHMARK_SLUG": "Not A Slug"}) == (
        '--bench-benchmark expects a lowercase benchmark slug (got "Not A Slug")'
    )


def test_the_store_is_the_default_the_option_or_the_ini_key(pytester: pytest.Pytester) -> None:
    default = _options(pytester, "--bench")
    assert default.store_path == pytester.path / ".benchmarks" / "benchsdk.sqlite3"
    given = _options(pytester, "--bench", "--bench-store=out/r.db")
    assert given.store_path == pytester.path / "out" / "r.db"
    assert _options(pytester, "--bench", "--bench-no-store").store_path is None
    pytester.makeini("[pytest]\nbench_store = data/ini.sqlite3\n")
    assert _options(pytester, "--bench").store_path == pytester.path / "data" / "ini.sqlite3"
    # The option wins over the ini key.
    assert _options(pytester, "--bench-store=o.db").store_path == pytester.path / "o.db"


def test_bench_args_are_names_and_values(pytester: pytest.Pytester) -> None:
    options = _options(pytester, "--bench-arg", "region=eu-west=1", "--bench-arg=--size=")
    assert options.custom_args == {"region": "eu-west=1", "size": ""}


def test_an_optional_value_after_a_space_says_to_write_it_with_an_equals_sign(
    pytester: pytest.Pytester,
) -> None:
    assert _refused(pytester, "--bench-compare", "main") == (
        "--bench-compare main: write --bench-compare=main (without '=', pytest takes 'main' "
        "for a file or directory to test)"
    )
    assert _refused(pytester, "--bench-compare-fail", "regressed").startswith(
        "--bench-compare-fail regressed: write --bench-compare-fail=regressed"
    )
    # A word that is a path to test is one: the flag stands alone.
    pytester.makepyfile(bench_x="")
    assert _options(pytester, "--bench-compare", "bench_x.py").compare is not None
    assert _options(pytester, "--bench-compare=main").compare is not None
