"""The option table (``_plugin/options/table.py``) is the one place an option is declared: what
pytest registers, the parsed settings' defaults and types, the flags ``pytest-benchsdk run``
shares and the reference page all come from it (the page's check is in tests/project/test_docs)."""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest

from pytest_benchsdk._engine.schedule import RunArgs
from pytest_benchsdk._plugin.options import IMPLYING_OPTIONS
from pytest_benchsdk._plugin.options.settings import CONVERTERS, BenchOptions
from pytest_benchsdk._plugin.options.table import DOCS_GROUPS, OPTIONS, Option, by_name
from pytest_benchsdk._session import SessionOptions
from pytest_benchsdk.runner._argv import USAGE, parse_cli_args, split_platform_flags
from pytest_benchsdk.runner._check import CHECK_FLAGS

#: This plugin's own options (pytest-benchmark's and pytest-codspeed's, with an ``owner``, are
#: in their plugins' groups: tests/plugin/options/test_foreign_options.py).
FLAGGED = [option for option in OPTIONS if option.flags and option.owner is None]
WITH_INI = [option for option in OPTIONS if option.ini is not None]
PARSED = [option for option in OPTIONS if option.field is not None]


def _parsed(options: BenchOptions, field: str) -> Any:
    if field.startswith("run_args."):
        return getattr(options.run_args, field.removeprefix("run_args."))
    if field == "compare_fail":
        return (options.compare_fail, options.compare_rules)
    if field.startswith("rounds."):
        return options.round_defaults.get(field.removeprefix("rounds."))
    return getattr(options, field)


def test_names_flags_and_ini_keys_are_each_declared_once() -> None:
    names = [option.name for option in OPTIONS]
    flags = [flag for option in OPTIONS for flag in option.flags]
    inis = [option.ini for option in WITH_INI]
    assert len(set(names)) == len(names)
    assert len(set(flags)) == len(flags)
    assert len(set(inis)) == len(inis)
    assert all(flag.startswith("--bench") for option in FLAGGED for flag in option.flags)
    assert all(
        flag.startswith(("--benchmark-", "--codspeed"))
        for option in OPTIONS
        if option.owner is not None
        for flag in option.flags
    )
    assert all(option.group in dict(DOCS_GROUPS) for option in OPTIONS)
    assert all(option.help or not option.flags for option in OPTIONS)
    assert all(option.ini_help for option in WITH_INI)
    assert all(option.doc for option in OPTIONS)


def test_every_converter_an_entry_names_exists_and_every_converter_is_used() -> None:
    named = {option.convert for option in PARSED}
    assert None not in named
    assert named == set(CONVERTERS)


def test_requirements_name_entries_parsed_before_them() -> None:
    order = [option.name for option in OPTIONS]
    for option in OPTIONS:
        if option.requires is not None:
            required = by_name(option.requires[0])
            assert required.field is not None
            assert order.index(required.name) < order.index(option.name)


@pytest.mark.parametrize("option", FLAGGED, ids=lambda option: option.flags[0])
def test_every_option_is_registered_with_pytest(pytester: pytest.Pytester, option: Option) -> None:
    config = pytester.parseconfig()
    assert config.getoption(option.name) == option.cli_default
    # Given on the command line, the value reaches the option's dest (a choice: its first one).
    for flag in option.flags:
        value = option.choices[0] if option.choices else "x"
        args = [flag] if option.action == "store_true" else [f"{flag}={value}"]
        given = pytester.parseconfig(*args).getoption(option.name)
        expected: object = True if option.action == "store_true" else value
        assert given == ([expected] if option.action == "append" else expected)


def test_the_plugin_registers_exactly_the_table(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    group = config._parser.getgroup("benchsdk")
    registered = [tuple(argument.names()) for argument in group.options]
    assert registered == [option.flags for option in FLAGGED]
    for option in WITH_INI:
        assert config.getini(option.ini or "") == option.ini_default


def test_bench_option_given_can_rely_on_empty_defaults() -> None:
    # bench_option_given: a --bench* option is set when its value is truthy.
    assert [option.name for option in FLAGGED if option.cli_default] == []


def test_the_implying_options_are_the_ones_they_were() -> None:
    assert set(IMPLYING_OPTIONS) == {
        "--bench-provider", "--bench-dry-run", "--bench-no-ingest", "--bench-check",
        "--bench-iterations", "--bench-phase-iterations", "--bench-concurrency",
        "--bench-stagger-delay-ms", "--bench-group-by", "--bench-shape", "--bench-arg",
        "--bench-json", "--bench-markdown", "--bench-html", "--bench-export", "--bench-compare",
        "--bench-ab", "--bench-save", "--bench-threshold", "--bench-warmup", "--bench-run-key",
        "--bench-worker-pool", "--bench-close-after-ms", "--bench-benchmark", "--bench-name",
        "--bench-instructions", "--bench-history-from", "--bench-rounds-min", "--bench-rounds-max",
        "--bench-rounds-min-time", "--bench-rounds-max-time", "--bench-rounds-timer",
        "--bench-rounds-calibration-precision", "--bench-rounds-warmup",
        "--bench-rounds-warmup-iterations", "--bench-rounds-disable-gc",
    }  # fmt: skip


def test_the_parsed_defaults_are_the_tables(pytester: pytest.Pytester) -> None:
    options = BenchOptions.from_config(pytester.parseconfig(), environ={})
    assert {o.name: _parsed(options, o.field or "") for o in PARSED} == {
        o.name: o.default for o in PARSED
    }
    assert options.store_path == pytester.path / str(by_name("bench_store").default)


def test_the_session_and_settings_class_defaults_are_the_tables() -> None:
    # The engine-side session imports no pytest, so not the table: its defaults must agree.
    session = {field.name: field.default for field in attrs.fields(SessionOptions)}
    bench = {field.name: field.default for field in attrs.fields(BenchOptions)}
    knobs = {f"run_args.{field.name}": field.default for field in attrs.fields(RunArgs)}
    for option in PARSED:
        field = option.field or ""
        if field in knobs:
            default = knobs[field]
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = default.factory()
            assert default == option.default, field
        elif field == "compare_fail":
            assert (session["compare_fail"], session["compare_rules"]) == option.default
        elif field in session:
            assert session[field] == option.default, field
        elif field in bench and bench[field] is not attrs.NOTHING:
            assert bench[field] == option.default, field


# A value per converter that it accepts, and the type it parses it to.
SAMPLES: dict[str, tuple[str, type]] = {
    "text": ("burst", str),
    "slug": ("my-bench", str),
    "positive_int": ("3", int),
    "instruction_calls": ("3", int),
    "non_negative_int": ("0", int),
    "non_negative_number": ("2.5", float),
    "group_by": ("round", str),
    "phase_sizes": ("cold=2", tuple),
    "compare_ref": ("latest", str),
    "compare_noise": ("5%", float),
    "compare_count_noise": ("0.2%", float),
    "compare_on": ("cpu_ms", tuple),
    "columns": ("min,ops", tuple),
    "score_resamples": ("10", int),
    "warnings_mode": ("error", str),
    "failed_iterations": ("record", str),
    "upload_timeout": ("5", float),
    "resubmit_timeout": ("5", float),
    "base_url": ("https://example.test", str),
    "or_none": ("key", str),
    "stripped": (" acme ", str),
    "baseline_name": ("main", str),
    "rounds_count": ("7", int),
    "rounds_seconds": ("0.5", float),
    "rounds_warmup_iterations": ("9", int),
    "rounds_warmup": ("on", bool),
}


@pytest.mark.parametrize(
    "option",
    [o for o in PARSED if o.convert in SAMPLES and o.action == "store" and o.requires is None],
    ids=lambda option: option.flag,
)
def test_a_given_value_is_parsed_by_the_entrys_converter(
    pytester: pytest.Pytester, option: Option
) -> None:
    value, parsed_type = SAMPLES[option.convert or ""]
    needs = ["--bench-run-key=k"] if option.name == "bench_worker_pool" else []
    config = pytester.parseconfig(f"{option.flags[0]}={value}", *needs)
    parsed = _parsed(BenchOptions.from_config(config, environ={}), option.field or "")
    assert isinstance(parsed, parsed_type)
    assert parsed == CONVERTERS[option.convert or ""](value, option.flag)


@pytest.mark.parametrize(
    "option",
    [o for o in WITH_INI if o.field and o.ini_type == "string"],
    ids=lambda option: option.ini,
)
def test_an_ini_value_is_parsed_as_its_options(pytester: pytest.Pytester, option: Option) -> None:
    value, _ = SAMPLES.get(option.convert or "", ("x", str))
    if option.name == "bench_ab":
        value = "HEAD"
    if option.name == "bench_rounds_timer":
        value = "time.process_time"
    pytester.makeini(f"[pytest]\n{option.ini} = {value}\n")
    from_ini = BenchOptions.from_config(pytester.parseconfig(), environ={})
    from_flag = BenchOptions.from_config(
        pytester.parseconfig(f"{option.flags[0]}={value}"), environ={}
    )
    assert _parsed(from_ini, option.field or "") == _parsed(from_flag, option.field or "")
    assert _parsed(from_ini, option.field or "") != option.default


# -- pytest-benchsdk run ---------------------------------------------------------------------


def test_the_run_command_takes_the_tables_shared_flags() -> None:
    shared = {flag for option in OPTIONS for flag in option.run_flags}
    assert set(re.findall(r"--[\w-]+", USAGE)) <= shared
    assert {"--slug", *CHECK_FLAGS} <= shared
    for option in OPTIONS:
        for flag in option.run_flags:
            if flag in CHECK_FLAGS or flag in ("--store", "--no-store"):
                continue  # the command's own dispatch (runner/_cli.py)
            if flag in ("--base-url", "--api-key"):
                assert split_platform_flags([flag, "x"])[2] == []
            elif option.action == "store_true":
                assert parse_cli_args([flag]).no_ingest is True
            else:
                field = (option.field or "").removeprefix("run_args.")
                value = SAMPLES.get(option.convert or "", ("a,b", str))[0]
                args = [flag, value, "--run-key", "k"] if flag == "--worker-pool" else [flag, value]
                parsed = getattr(parse_cli_args(args), field)
                assert parsed is not None, flag


@pytest.mark.parametrize(
    "option",
    [o for o in OPTIONS if o.run_flags and o.convert in set(SAMPLES) - {"or_none", "base_url"}],
    ids=lambda option: option.flags[0],
)
def test_the_run_commands_shared_flags_convert_as_the_options_do(option: Option) -> None:
    # The same converter behind both spellings: the same message, with the flag's own name.
    converter = CONVERTERS[option.convert or ""]
    with pytest.raises(ValueError) as from_table:
        converter(" " if option.convert == "text" else "-x", option.flags[0])
    with pytest.raises(ValueError) as from_run:
        parse_cli_args([option.run_flags[0], " " if option.convert == "text" else "-x"])
    assert str(from_run.value) == str(from_table.value).replace(
        option.flags[0], option.run_flags[0]
    )


# -- what the table says beyond one value ----------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["--bench-ab-mode=duet"], ["--bench-ab-processes=2"], ["--bench-ab-processes=abc"]],
    ids=["mode", "processes", "bad-processes"],
)
def test_an_option_that_requires_another_says_so_before_its_value(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    flag = args[0].partition("=")[0]
    with pytest.raises(
        pytest.UsageError, match=f"^{flag} is for A/B sessions: add --bench-ab=REV$"
    ):
        BenchOptions.from_config(pytester.parseconfig(*args), environ={})


def test_a_blank_text_is_no_value_given(pytester: pytest.Pytester) -> None:
    options = BenchOptions.from_config(
        pytester.parseconfig("--bench-ab-setup= ", "--bench-org= "), environ={}
    )
    assert (options.ab, options.ab_setup, options.org) == (None, None, None)


def test_an_environment_fallback_is_read_only_without_the_option(
    pytester: pytest.Pytester,
) -> None:
    env = {"BENCHMARK_SLUG": "from-env", "BENCHMARK_NAME": "From env"}
    from_env = BenchOptions.from_config(pytester.parseconfig(), environ=env).run_args
    assert (from_env.benchmark, from_env.name) == ("from-env", "From env")
    given = BenchOptions.from_config(
        pytester.parseconfig("--bench-benchmark=given", "--bench-name=Given"), environ=env
    ).run_args
    assert (given.benchmark, given.name) == ("given", "Given")
    with pytest.raises(pytest.UsageError, match=r"^--bench-benchmark expects a lowercase"):
        BenchOptions.from_config(pytester.parseconfig(), environ={"BENCHMARK_SLUG": "Not A Slug"})


def test_the_ini_and_the_option_combine_as_the_entry_says(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nbench_warnings_ignore = p99-few-samples\nbench_compare_fail = true\n"
        "bench_compare_noise = 7\nbench_warnings = error\n"
    )
    options = BenchOptions.from_config(
        pytester.parseconfig(
            "--bench-warnings-ignore=high-variance",
            "--bench-compare-fail=min:5%",
            "--bench-compare-noise=3",
        ),
        environ={},
    )
    assert options.warnings_ignore == {"p99-few-samples", "high-variance"}  # extend
    assert options.compare_fail is True  # pair: the ini's verdicts and the option's rule
    assert len(options.compare_rules) == 1
    assert options.compare_noise == pytest.approx(0.03)  # fallback: the option wins
    assert options.warnings == "error"  # or
    pytester.makeini("[pytest]\nbench_compare_noise = lots\n")
    config = pytester.parseconfig()
    with pytest.raises(pytest.UsageError, match=r"^bench_compare_noise \(ini\) expects"):
        BenchOptions.from_config(config, environ={})
