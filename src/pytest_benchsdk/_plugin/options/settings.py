"""The plugin's options parsed and validated once into :class:`BenchOptions` (a bad value is a
:class:`pytest.UsageError` naming its flag), driven by the option table
(:data:`~.table.OPTIONS`): each entry's given value (the option's, its ini key's, its environment
variable's, combined as the entry says) goes through the converter the entry names in
:data:`CONVERTERS`, else the entry's default applies; what depends on several options (the store,
A/B's refusals, the worker pool's run key) is checked after. Imported only when a ``--bench*``
option is set or bench files are run (see :mod:`pytest_benchsdk._plugin.options`)."""

from __future__ import annotations

import difflib
import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import attrs
import pytest

from pytest_benchsdk._analysis.baseline import CompareRule
from pytest_benchsdk._analysis.hygiene import WARNING_CODES
from pytest_benchsdk._base.redact import redact_url
from pytest_benchsdk._base.storepath import IniFile, resolve_store
from pytest_benchsdk._config.thresholds import parse_cli_thresholds
from pytest_benchsdk._engine.flag_values import (
    parse_group_by,
    parse_non_negative_int,
    parse_non_negative_number,
    parse_positive_int,
    parse_providers,
    parse_slug,
    parse_text,
)
from pytest_benchsdk._engine.schedule import RunArgs, is_env_no_ingest
from pytest_benchsdk._instruments import INSTRUCTIONS_KEY
from pytest_benchsdk._plugin.options import bench_enabled, foreign_mapped
from pytest_benchsdk._plugin.options.foreign import BENCHMARK, CODSPEED, load_timer
from pytest_benchsdk._plugin.options.table import (
    COMPARE_FAIL_VERDICTS,
    OPTIONS,
    Option,
    by_name,
)
from pytest_benchsdk._session import (
    SessionOptions,
    parse_failed_iterations,
    unwritable_reason,
)
from pytest_benchsdk._views.pytest_benchmark import PYTEST_BENCHMARK
from pytest_benchsdk.results import check_baseline_name

__all__ = ["CONVERTERS", "BenchOptions", "CProfileSettings", "parse_options"]


def _default(name: str) -> Any:
    return by_name(name).default


@attrs.frozen
class CProfileSettings:
    """``--benchmark-cprofile COLUMN`` and its loops, top and dump prefix."""

    sort: str
    loops: int = 1
    top: int = 25
    dump: str | None = None


@attrs.frozen(kw_only=True)
class BenchOptions(SessionOptions):
    """The plugin's options after validation: the session's (:class:`SessionOptions`, what
    the engine-side session runs with) and what only the glue reads."""

    enabled: bool
    file_patterns: tuple[str, ...]
    check: bool
    custom_args: Mapping[str, str]
    resubmit: bool = _default("bench_resubmit")
    resubmit_other_platform: bool = _default("bench_resubmit_to_other_platform")
    resubmit_rejected: bool = _default("bench_resubmit_rejected")
    #: ``--bench-resubmit-timeout``: how long a resubmit may deliver (seconds).
    resubmit_timeout_s: float = _default("bench_resubmit_timeout")
    #: ``--bench-ab=REV``: the git revision side A runs (None: no A/B session).
    ab: str | None = _default("bench_ab")
    #: ``--bench-ab-setup CMD``: run once in side A's worktree before the sides start.
    ab_setup: str | None = _default("bench_ab_setup")
    #: ``--bench-ab-mode``: ``interleaved`` (one side after the other) or ``duet`` (both at
    #: once).
    ab_mode: str = _default("bench_ab_mode")
    #: ``--bench-ab-processes``: processes per side, taking turns round by round.
    ab_processes: int = _default("bench_ab_processes")
    #: The benchmark fixture's rounds settings for the session (``--bench-rounds-*``, their ini
    #: keys, pytest-benchmark's and pytest-codspeed's options): ``RoundSettings``' keyword
    #: arguments, beneath each test's marker keys.
    round_defaults: Mapping[str, Any] = attrs.Factory(dict)
    #: ``--benchmark-disable``: benchmarked tests call their function once, unmeasured.
    benchmarks_disabled: bool = False
    #: ``--benchmark-group-by``: what makes benchmarked tests one benchmark.
    group_by_tests: str = "group"
    #: ``--benchmark-cprofile`` (its column, loops, top and dump prefix), or None.
    cprofile: CProfileSettings | None = None
    #: ``--benchmark-verbose`` (1) / ``--benchmark-quiet`` (-1): the summary's verbosity.
    summary_verbosity: int | None = None
    #: Lines the session start says about foreign options (no meaning here, what instead).
    compat_lines: tuple[str, ...] = ()

    @classmethod
    def from_config(
        cls, config: pytest.Config, environ: Mapping[str, str] | None = None
    ) -> BenchOptions:
        """Parse and validate; a bad value raises :class:`pytest.UsageError` with its flag."""
        env = os.environ if environ is None else environ
        _check_spaced_values(config)
        values = parse_options(config, env)
        compat = _map_foreign(config, values, env)
        # What depends on several options, checked once each entry is parsed.
        knobs = [field for field in values if field.startswith("run_args.")]
        run_args = {field.removeprefix("run_args."): values.pop(field) for field in knobs}
        run_args["no_ingest"] = bool(run_args["no_ingest"]) or is_env_no_ingest(env)
        if run_args["worker_pool"] is not None and run_args["run_key"] is None:
            raise pytest.UsageError("--bench-worker-pool requires --bench-run-key")
        store_path, store_origin = _store(config)
        if values["save_as"] is not None and store_path is None:
            raise pytest.UsageError(
                f"--bench-save {values['save_as']} keeps the run's name in the results store: it "
                "cannot be used with --bench-no-store"
            )
        if values["history_from"] is not None and store_path is None:
            raise pytest.UsageError(
                f"--bench-history-from {values['history_from']} marks the history in the "
                "results store: it cannot be used with --bench-no-store"
            )
        if values["ab"] is not None:
            _check_ab(config)
        # --bench-compare-fail's entry parses to both: (the verdicts fail, the expressions).
        values["compare_fail"], values["compare_rules"] = values["compare_fail"]
        _map_foreign_baselines(config, values, compat)
        if values["instructions"] and not values["compare_on"]:
            # Counts are what this mode is for: their verdicts decide, unless told otherwise.
            values["compare_on"] = (INSTRUCTIONS_KEY,)
        return cls(
            enabled=bench_enabled(config),
            run_args=RunArgs(**run_args),
            # An A/B session is local: neither side is reported to the platform.
            dry_run=run_args["no_ingest"] or values["ab"] is not None,
            store_path=store_path,
            store_origin=store_origin,
            compat_lines=tuple(compat.pop("lines")),
            **compat,
            **values,
        )


def parse_options(config: pytest.Config, env: Mapping[str, str]) -> dict[str, Any]:
    """Every table entry with a ``field``, parsed, in the table's order (the first bad value is
    the usage error): ``{field: value}``."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        if option.field is None:
            continue
        raw, where = _given(option, config, env)
        if option.requires is not None:
            required, why = option.requires
            if values[by_name(required).field or ""] is None:
                if _is_given(option, raw):
                    raise pytest.UsageError(f"{option.flag} {why}")
                raw = None
        if raw is None:
            values[option.field] = option.default
            continue
        try:
            values[option.field] = CONVERTERS[option.convert or ""](raw, where)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    return values


def _check_spaced_values(config: pytest.Config) -> None:
    """An option whose value is optional (``--bench-compare``) takes it only after ``=``: pytest
    reads ``--bench-compare main`` as the option alone and ``main`` as a file. When that word
    is no file, say how to write it rather than leave pytest's "file or directory not found"."""
    args = [str(a) for a in config.invocation_params.args]
    for option in OPTIONS:
        if option.nargs != "?":
            continue
        for flag in option.flags:
            for at, arg in enumerate(args[:-1]):
                word = args[at + 1]
                if arg != flag or word.startswith("-"):
                    continue
                path = Path(str(config.invocation_params.dir), word.partition("::")[0])
                if not path.exists():
                    raise pytest.UsageError(
                        f"{flag} {word}: write {flag}={word} (without '=', pytest takes "
                        f"{word!r} for a file or directory to test)"
                    )


def _given(option: Option, config: pytest.Config, env: Mapping[str, str]) -> tuple[Any, str]:
    """What was given for ``option`` (None: nothing) and the name a message gives it."""
    raw: Any = config.getoption(option.name) if option.flags else None
    where = option.flag
    if option.ini is not None:
        ini = config.getini(option.ini)
        if option.ini_rule == "fallback":
            if raw is None:
                raw, where = ini, f"{option.ini} (ini)"
        elif option.ini_rule == "or":
            raw = raw or ini
        elif option.ini_rule == "extend":
            raw = [*ini, *(raw or ())]
        else:  # pair
            raw = (ini, raw)
    if raw is None and option.env_fallback is not None and env.get(option.env_fallback):
        raw = env[option.env_fallback]
    return raw, where


def _is_given(option: Option, raw: object) -> bool:
    """Whether a value was given (a blank text is none, where the converter strips it)."""
    if option.convert == "stripped":
        return _stripped(raw, option.flag) is not None
    return raw is not None


def _store(config: pytest.Config) -> tuple[Path | None, str]:
    """The results store (``--bench-store``, ``--bench-no-store``, the ini's ``bench_store``,
    the default), resolved with the rule the CLI uses too (``_base/storepath``)."""
    store = by_name("bench_store")
    if config.getoption("bench_no_store"):
        return None, store.flag
    ini_dir = config.inipath.parent if config.inipath else config.rootpath
    location = resolve_store(
        config.getoption(store.name),
        flag=store.flag,
        given_base=config.rootpath,
        ini=IniFile(ini_dir, config.inipath, str(config.getini(store.ini or "")).strip()),
        rootdir=config.rootpath,
        rootdir_words="the rootdir",
    )
    return location.path, location.origin


def _check_ab(config: pytest.Config) -> None:
    """``--bench-ab`` is refused with ``--bench-compare`` and with pytest-xdist (the A/B session
    runs both sides itself)."""
    if config.getoption("bench_compare") is not None:
        raise pytest.UsageError(
            "--bench-ab and --bench-compare both compare this run with another: pick one "
            "(--bench-ab runs the revision now, interleaved; --bench-compare reads a stored run)"
        )
    workers = getattr(config.option, "numprocesses", None)
    if workers or getattr(config.option, "dist", "no") != "no":
        raise pytest.UsageError(
            "--bench-ab runs both sides in processes of its own, one iteration at a time: "
            "run it without pytest-xdist (drop -n/--dist)"
        )


# -- the converters: (what was given, the name a message gives it) -> the parsed value --------


def _flag(raw: object, where: str) -> bool:
    return bool(raw)


def _or_none(raw: object, where: str) -> object:
    return raw or None


def _stripped(raw: object, where: str) -> str | None:
    """A text, surrounding blanks dropped; a blank one is None."""
    return str(raw or "").strip() or None


def _choice(raw: object, where: str) -> str:
    return str(raw)  # argparse checked it against the entry's choices


def _patterns(raw: Sequence[str], where: str) -> tuple[str, ...]:
    return tuple(raw)


def _text(raw: object, where: str) -> str:
    return parse_text(where, str(raw))


def _slug(raw: object, where: str) -> str:
    return parse_slug(where, str(raw))


def _positive_int(raw: object, where: str) -> int:
    return parse_positive_int(where, str(raw))


def _non_negative_int(raw: object, where: str) -> int:
    return parse_non_negative_int(where, str(raw))


def _non_negative_number(raw: object, where: str) -> float:
    return parse_non_negative_number(where, str(raw))


def _group_by(raw: object, where: str) -> str:
    return parse_group_by(where, str(raw))


def _providers(raw: Sequence[str], where: str) -> tuple[str, ...] | None:
    return parse_providers(raw) if raw else None


def _thresholds(raw: Sequence[str], where: str) -> Any:
    return parse_cli_thresholds(raw or ())


def _ab_processes(raw: object, where: str) -> int:
    return parse_positive_int(where, str(raw), 64)


def _baseline_name(raw: object, where: str) -> str:
    """``--bench-save NAME``: a valid baseline name (the session checks it has a store)."""
    from pytest_benchsdk.results import check_baseline_name

    try:
        return check_baseline_name(str(raw).strip())
    except ValueError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None


def _history_from(raw: object, where: str) -> str:
    """``--bench-history-from RUN|now``: ``now`` or a run id (resolved when the session
    starts, in the store)."""
    text = str(raw).strip()
    if not text:
        raise pytest.UsageError(
            f"{where}: expects 'now' or a stored run id (pytest-benchsdk runs lists them)"
        )
    return text


def _percentage(option: str) -> Callable[[object, str], float]:
    """The converter of a percentage option (``--bench-compare-noise PCT``, or the ini's): a
    number >= 0 and < 100, ``2`` or ``2%``, as a fraction; empty: the option's default."""

    def convert(raw: object, where: str) -> float:
        text = str(raw or "").strip().removesuffix("%").strip()
        if not text:
            return float(_default(option))
        try:
            percent = float(text)
        except ValueError:
            percent = -1.0
        if not (percent >= 0 and percent < 100):
            raise pytest.UsageError(
                f'{where} expects a percentage >= 0 and < 100, e.g. 2 or 2.5% (got "{raw}")'
            )
        return percent / 100

    return convert


def _compare_on(raw: object, where: str) -> tuple[str, ...]:
    """``--bench-compare-on KEY[,KEY...]`` (or the ini's): metric keys, each once, in order.
    Whether a participant measured each is known only once the run has: the session end
    says so (a usage error naming the keys there are)."""
    keys = [key.strip() for key in str(raw or "").split(",")]
    if any(not key for key in keys) and any(keys):
        raise pytest.UsageError(f'{where} expects metric keys separated by commas (got "{raw}")')
    return tuple(dict.fromkeys(key for key in keys if key))


def _compare_fail(
    raw: tuple[object, Sequence[object] | None], where: str
) -> tuple[bool, tuple[CompareRule, ...]]:
    """``--bench-compare-fail`` (bare, or the ini's: the verdicts fail the session) and its
    ``=STAT:LIMIT`` expressions, every malformed one named in one usage error."""
    ini, given = raw
    verdicts = bool(ini)
    rules: list[CompareRule] = []
    problems: list[str] = []
    for value in given or []:
        if value is True or value == COMPARE_FAIL_VERDICTS:
            verdicts = True
            continue
        try:
            rules.append(CompareRule.parse(str(value)))
        except ValueError as exc:
            problems.append(f"{where}={value}: {exc}")
    if problems:
        raise pytest.UsageError("\n".join(problems))
    return verdicts, tuple(rules)


def _columns(raw: object, where: str) -> tuple[str, ...]:
    """``--bench-columns COL[,COL...]`` (or the ini's): pytest-benchmark's column names."""
    from pytest_benchsdk._views.text import COLUMNS

    names = [name.strip().lower() for name in str(raw or "").split(",") if name.strip()]
    unknown = [name for name in names if name not in COLUMNS]
    if unknown:
        raise pytest.UsageError(
            f"{where}: unknown column(s) {', '.join(unknown)} (the columns: {', '.join(COLUMNS)})"
        )
    return tuple(dict.fromkeys(names))


def _warnings_ignore(raw: Sequence[object], where: str) -> frozenset[str]:
    """``--bench-warnings-ignore`` and the ini's codes, each a known warning code."""
    codes = [code.strip() for value in raw for code in str(value).split(",") if code.strip()]
    for code in codes:
        if code not in WARNING_CODES:
            close = [c for c in WARNING_CODES if c.startswith(code)] or (
                difflib.get_close_matches(code, WARNING_CODES, n=1, cutoff=0.5)
            )
            hint = f"; did you mean {close[0]}?" if close else ""
            raise pytest.UsageError(
                f'{where}: unknown warning code "{code}" (codes: {", ".join(WARNING_CODES)}){hint}'
            )
    return frozenset(codes)


def _html_path(raw: object, where: str) -> Path | None:
    """``--bench-html PATH``: a writable file path, and plotly installed (the report extra)."""
    path = _output_path(raw, where)
    if path is None:
        return None
    try:
        found = importlib.util.find_spec("plotly") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise pytest.UsageError(f"{where} needs plotly: pip install 'pytest-benchsdk[report]'")
    return path


def _exports(raw: Sequence[object], where: str) -> tuple[tuple[str, Path], ...]:
    """``--bench-export FORMAT:PATH``, each checked now: a known format, a writable path."""
    from pytest_benchsdk._views.exports import EXPORT_FORMATS

    found: list[tuple[str, Path]] = []
    for value in raw or ():
        text = str(value)
        fmt, sep, target = text.partition(":")
        fmt = fmt.strip().lower()
        if not sep or not target:
            raise pytest.UsageError(
                f"{where} expects FORMAT:PATH, e.g. gab:benchmark.json (got {text!r}); "
                f"formats: {', '.join(EXPORT_FORMATS)}"
            )
        if fmt not in EXPORT_FORMATS:
            raise pytest.UsageError(
                f"{where} {text}: unknown format {fmt!r}; expected one of "
                f"{', '.join(EXPORT_FORMATS)}"
            )
        path = Path(target).absolute()
        problem = unwritable_reason(path)
        if problem is not None:
            raise pytest.UsageError(f"{where} {text}: {problem}")
        if any(path == other for _, other in found):
            raise pytest.UsageError(f"{where} {text}: {target} is given twice")
        found.append((fmt, path))
    return tuple(found)


def _base_url(raw: object, where: str) -> str | None:
    """``--bench-base-url``: an http(s) URL with a host, else a usage error (not a long
    transient wait at the end of the session)."""
    if raw is None or str(raw).strip() == "":
        return None
    value = str(raw).strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{where} expects an http(s) URL with a host, like "
            f'https://platform.computesdk.com (got "{redact_url(value)}")'
        )
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise ValueError(f'{where} has an invalid port (got "{redact_url(value)}")') from None
    return value


def _instruction_calls(raw: object, where: str) -> int:
    if str(raw).strip() == "":
        return int(_default("bench_instructions_calls"))
    return parse_positive_int(where, str(raw).strip())


def _seconds(name: str) -> Callable[[object, str], float]:
    """A converter of seconds (>= 0); empty means the option's default."""

    def convert(raw: object, where: str) -> float:
        if str(raw).strip() == "":
            return float(_default(name))
        return float(parse_non_negative_number(where, str(raw)))

    return convert


def _phase_sizes(raw: object, where: str) -> tuple[tuple[str, int], ...]:
    """``--bench-phase-iterations cold=2,warm=5``: ``(phase, iterations)`` pairs."""
    text = str(raw)
    sizes: dict[str, int] = {}
    for part in text.split(","):
        name, sep, count = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(
                f'{where} expects PHASE=N[,PHASE=N...], e.g. "cold=2,warm=5" (got "{text}")'
            )
        if name in sizes:
            raise ValueError(f'{where} names the phase {name!r} twice (got "{text}")')
        sizes[name] = parse_positive_int(f"{where} {name}", count.strip())
    return tuple(sizes.items())


def _output_path(raw: object, where: str) -> Path | None:
    """A file the session writes at its end, checked now (a usage error, not a lost result)."""
    if not raw:
        return None
    path = Path(str(raw)).absolute()
    problem = unwritable_reason(path)
    if problem is not None:
        raise pytest.UsageError(f"{where} {raw}: {problem}")
    return path


def _score_resamples(raw: object, where: str) -> int:
    text = str(raw).strip()
    if not text.isdigit():
        raise pytest.UsageError(f'{where} expects an integer >= 0 (got "{raw}")')
    return int(text)


def _failed_iterations(raw: object, where: str) -> str:
    if str(raw).strip() == "":
        return str(_default("bench_failed_iterations"))
    return parse_failed_iterations(where, str(raw))


def _warnings_mode(raw: object, where: str) -> str:
    text = str(raw or _default("bench_warnings")).strip().lower()
    if text not in ("warn", "full", "error", "off"):
        raise pytest.UsageError(f'{where} expects warn, full, error or off (got "{raw}")')
    return text


def _compare_ref(raw: object, where: str) -> str:
    text = str(raw).strip()
    if not text:
        raise pytest.UsageError(
            f"{where}= expects a REF: 'latest', a baseline name, a stored run id or a "
            f"--bench-json file (got ''); {where} alone means latest"
        )
    return text


def _custom_args(raw: Sequence[str], where: str) -> dict[str, str]:
    args: dict[str, str] = {}
    for value in raw:
        name, sep, val = value.partition("=")
        name = name.strip().lstrip("-")
        if not sep or not name:
            raise ValueError(f'{where} expects NAME=VALUE (got "{value}")')
        args[name] = val
    return args


#: The converters the table's entries name (:attr:`~.table.Option.convert`): each takes what was
#: given and the name a message gives it, and returns the parsed value or raises ``ValueError`` /
#: :class:`pytest.UsageError` with its message.
_CONVERTERS: Mapping[str, Callable[[Any, str], Any]] = {
    "flag": _flag,
    "or_none": _or_none,
    "stripped": _stripped,
    "choice": _choice,
    "patterns": _patterns,
    "text": _text,
    "slug": _slug,
    "positive_int": _positive_int,
    "non_negative_int": _non_negative_int,
    "non_negative_number": _non_negative_number,
    "group_by": _group_by,
    "providers": _providers,
    "thresholds": _thresholds,
    "phase_sizes": _phase_sizes,
    "ab_processes": _ab_processes,
    "baseline_name": _baseline_name,
    "history_from": _history_from,
    "compare_ref": _compare_ref,
    "score_resamples": _score_resamples,
    "compare_noise": _percentage("bench_compare_noise"),
    "compare_count_noise": _percentage("bench_compare_count_noise"),
    "compare_on": _compare_on,
    "instruction_calls": _instruction_calls,
    "compare_fail": _compare_fail,
    "columns": _columns,
    "warnings_mode": _warnings_mode,
    "warnings_ignore": _warnings_ignore,
    "failed_iterations": _failed_iterations,
    "upload_timeout": _seconds("bench_upload_timeout"),
    "resubmit_timeout": _seconds("bench_resubmit_timeout"),
    "output_path": _output_path,
    "html_path": _html_path,
    "exports": _exports,
    "base_url": _base_url,
    "custom_args": _custom_args,
}


# -- the rounds settings and pytest-benchmark's / pytest-codspeed's options ------------------


def _rounds_count(raw: object, where: str) -> int | None:
    text = str(raw if raw is not None else "").strip()
    return None if not text else parse_positive_int(where, text)


def _rounds_warmup_iterations(raw: object, where: str) -> int | None:
    text = str(raw if raw is not None else "").strip()
    return None if not text else parse_non_negative_int(where, text)


def _rounds_seconds(raw: object, where: str) -> float | None:
    text = str(raw if raw is not None else "").strip()
    return None if not text else float(parse_non_negative_number(where, text))


def _rounds_timer(raw: object, where: str) -> Callable[[], float] | None:
    text = str(raw if raw is not None else "").strip()
    if not text:
        return None
    try:
        timer: Callable[[], float] = load_timer(text)
    except Exception as exc:  # argparse.ArgumentTypeError: its message
        raise pytest.UsageError(f"{where}: {exc}") from None
    return timer


def _rounds_warmup(raw: object, where: str) -> bool | None:
    text = str(raw if raw is not None else "").strip().lower()
    if not text:
        return None
    if text in ("on", "true", "yes", "1"):
        return True
    if text in ("off", "false", "no", "0"):
        return False
    raise pytest.UsageError(f'{where} expects on or off (got "{raw}")')


def _rounds_flag(raw: object, where: str) -> bool | None:
    return True if raw else None


_ROUND_CONVERTERS: Mapping[str, Callable[[Any, str], Any]] = {
    "rounds_count": _rounds_count,
    "rounds_warmup_iterations": _rounds_warmup_iterations,
    "rounds_seconds": _rounds_seconds,
    "rounds_timer": _rounds_timer,
    "rounds_warmup": _rounds_warmup,
    "rounds_flag": _rounds_flag,
}
CONVERTERS: Mapping[str, Callable[[Any, str], Any]] = {**_CONVERTERS, **_ROUND_CONVERTERS}

#: pytest-benchmark's options that map onto a rounds setting: (its dest, the setting).
_BENCHMARK_ROUNDS: Final = (
    ("benchmark_min_rounds", "min_rounds"),
    ("benchmark_min_time", "min_time"),
    ("benchmark_max_time", "max_time"),
    ("benchmark_timer", "timer"),
    ("benchmark_calibration_precision", "calibration_precision"),
    ("benchmark_warmup", "warmup"),
    ("benchmark_warmup_iterations", "warmup_iterations"),
    ("benchmark_disable_gc", "disable_gc"),
)


def _foreign(config: pytest.Config, dest: str) -> tuple[Any, bool]:
    """A foreign option's value, and whether it was given (not its plugin's default). None is
    not given either: pytest-benchmark 5.3 declares ``--benchmark-columns`` with the default
    None (resolved later, to 5.1's default), and where it is installed but switched off for the
    session (``bench_benchmark_fixture = benchsdk``) its declaration is the one parsed."""
    default = by_name(dest).cli_default
    value = getattr(config.option, dest, default)
    if value is None:
        return default, False
    if isinstance(value, list) and isinstance(default, list):
        return value, list(value) != list(default)
    return value, value != default


def _foreign_round(key: str, value: Any) -> Any:
    """A pytest-benchmark option's value as the rounds setting ``key`` holds it."""
    if key == "timer":
        return load_timer(str(value))
    if key in ("min_time", "max_time"):
        return float(str(value))
    if key == "warmup":
        return True if value is None else bool(value)  # alone (nargs="?"): on
    if key == "disable_gc":
        return bool(value)
    return int(value)


def _map_foreign(
    config: pytest.Config, values: dict[str, Any], env: Mapping[str, str]
) -> dict[str, Any]:
    """The rounds settings (``rounds.*`` entries, then pytest-benchmark's and pytest-codspeed's
    options beneath a ``--bench-rounds-*`` given on the command line, above its ini key) and
    the foreign options that are not about baselines, as :class:`BenchOptions` fields (and
    ``lines``: what the session start says)."""
    rounds = {
        field.removeprefix("rounds."): values.pop(field)
        for field in [f for f in values if f.startswith("rounds.")]
    }
    on_command_line = {
        key
        for key in rounds
        if config.getoption(f"bench_rounds_{_ROUND_FLAG.get(key, key)}", None) not in (None, False)
    }
    out: dict[str, Any] = {"lines": []}
    lines: list[str] = out["lines"]
    pb = foreign_mapped(config, BENCHMARK)
    if pb:
        for dest, key in _BENCHMARK_ROUNDS:
            value, given = _foreign(config, dest)
            if given and key not in on_command_line:
                rounds[key] = _foreign_round(key, value)
    if foreign_mapped(config, CODSPEED):
        warmup_time, given = _foreign(config, "codspeed_warmup_time")
        if given and "warmup" not in on_command_line:
            rounds["warmup"] = float(warmup_time) > 0
            # pytest-codspeed warms up for that long (pytest-benchmark's warm-up, which
            # --bench-rounds-warmup is, lasts up to max_time and then warmup_iterations).
            rounds["warmup_time"] = max(float(warmup_time), 0.0)
        for dest, key in (("codspeed_max_time", "max_time"), ("codspeed_max_rounds", "max_rounds")):
            value, given = _foreign(config, dest)
            if given and key not in on_command_line:
                if key == "max_rounds" and int(value) < 1:
                    raise pytest.UsageError(f"--codspeed-max-rounds expects N >= 1 (got {value})")
                if not float(value) >= 0:
                    raise pytest.UsageError(
                        f"--{dest.replace('_', '-')} expects >= 0 (got {value})"
                    )
                rounds[key] = int(value) if key == "max_rounds" else float(value)
        mode, given = _foreign(config, "codspeed_mode")
        if mode in ("instrumentation", "simulation"):
            values["instructions"] = True
        elif mode == "memory":
            lines.append(
                "benchsdk: --codspeed-mode=memory: pytest-benchsdk measures time (and, with "
                "--bench-instructions, instruction counts), not memory; the tests are timed"
            )
    out["round_defaults"] = {key: value for key, value in rounds.items() if value is not None}
    if not pb:
        return out
    disabled = bool(getattr(config.option, "benchmark_disable", False)) and not getattr(
        config.option, "benchmark_enable", False
    )
    if disabled and getattr(config.option, "benchmark_only", False):
        raise pytest.UsageError("Can't have both --benchmark-only and --benchmark-disable options.")
    out["benchmarks_disabled"] = disabled
    group_by, _ = _foreign(config, "benchmark_group_by")
    out["group_by_tests"] = _check_group_by(str(group_by))
    columns, given = _foreign(config, "benchmark_columns")
    if given and not values["columns"]:
        values["columns"] = tuple(dict.fromkeys(str(c) for c in columns))
    sort, given = _foreign(config, "benchmark_sort")
    if given:
        values["table_sort"] = str(sort)
    unit, _ = _foreign(config, "benchmark_time_unit")
    if unit not in (None, "auto"):
        values["table_time_unit"] = str(unit)
    names, given = _foreign(config, "benchmark_name")
    if given:
        values["table_names"] = str(names)
    verbose = getattr(config.option, "benchmark_verbose", False)
    quiet = getattr(config.option, "benchmark_quiet", False)
    out["summary_verbosity"] = 1 if verbose else -1 if quiet else None
    sort_by, _ = _foreign(config, "benchmark_cprofile")
    if sort_by is not None:
        loops, _ = _foreign(config, "benchmark_cprofile_loops")
        top, _ = _foreign(config, "benchmark_cprofile_top")
        dump, _ = _foreign(config, "benchmark_cprofile_dump")
        if int(top) < 1:
            raise pytest.UsageError(f"--benchmark-cprofile-top expects N >= 1 (got {top})")
        out["cprofile"] = CProfileSettings(
            str(sort_by), int(loops or 1), int(top), str(dump[-1]) if dump else None
        )
    histogram, given = _foreign(config, "benchmark_histogram")
    if given and values["html_path"] is None:
        target = f"{histogram[-1]}.html"
        try:
            values["html_path"] = _html_path(target, "--benchmark-histogram")
        except pytest.UsageError as exc:
            lines.append(f"benchsdk: {exc}; no report written (it holds the histograms here)")
    netrc, given = _foreign(config, "benchmark_netrc")
    if given:
        lines.append(
            f"benchsdk: --benchmark-netrc {netrc}: credentials for pytest-benchmark's "
            "Elasticsearch storage, which has no meaning here: the runs are kept in the results "
            "store (--bench-store) and sent to the platform with BENCHMARKS_PLATFORM_API_KEY"
        )
    return out


#: A rounds setting's ``--bench-rounds-*`` dest, where it is not ``bench_rounds_<setting>``.
_ROUND_FLAG: Final = {"min_rounds": "min", "max_rounds": "max"}

_GROUPINGS: Final = ("group", "name", "fullname", "func", "fullfunc", "param")


def _check_group_by(spec: str) -> str:
    """``--benchmark-group-by``: its labels, comma-separated (``param:NAME`` too)."""
    for part in spec.split(","):
        if part not in _GROUPINGS and not (part.startswith("param:") and part[6:]):
            raise pytest.UsageError(
                f"--benchmark-group-by={spec}: unsupported grouping {part!r} (one of "
                f"{', '.join(_GROUPINGS)}, param:NAME, or several with commas)"
            )
    return spec


def _storage(config: pytest.Config, lines: list[str]) -> Path | None:
    """``--benchmark-storage``: the folder of pytest-benchmark's files (``file://PATH`` or a
    plain path, relative to the invocation directory as pytest-benchmark's is); None for an
    Elasticsearch storage (one line says so)."""
    value = str(_foreign(config, "benchmark_storage")[0])
    if value.startswith("elasticsearch+"):
        lines.append(
            f"benchsdk: --benchmark-storage {redact_url(value)}: pytest-benchmark's "
            "Elasticsearch storage has no meaning here: the runs are kept in the results store "
            "(--bench-store) and on the platform; --benchmark-save names a baseline there and "
            "--benchmark-compare compares with one, no file is written"
        )
        return None
    path = value.removeprefix("file://") if "://" in value else value
    if "://" in path:
        raise pytest.UsageError(
            f"--benchmark-storage {value}: expected file://PATH or "
            "elasticsearch+http[s]://host1,host2/index/doctype"
        )
    return config.invocation_params.dir / path


def _map_foreign_baselines(
    config: pytest.Config, values: dict[str, Any], compat: dict[str, Any]
) -> None:
    """pytest-benchmark's ``--benchmark-save``/``-autosave``/``-compare``/``-compare-fail``/
    ``-json`` onto the baselines, the exports and pytest-benchmark's storage."""
    if not foreign_mapped(config, BENCHMARK):
        return
    lines: list[str] = compat["lines"]
    disabled = compat.get("benchmarks_disabled", False)
    storage = _storage(config, lines)
    folder = storage / pytest_benchmark_machine_id() if storage is not None else None
    json_file, given = _foreign(config, "benchmark_json")
    if given and json_file is not None and not disabled:
        target = _output_path(getattr(json_file, "name", json_file), "--benchmark-json")
        if target is not None and all(path != target for _, path in values["exports"]):
            values["exports"] = (*values["exports"], (PYTEST_BENCHMARK, target))
    save, _ = _foreign(config, "benchmark_save")
    autosave, _ = _foreign(config, "benchmark_autosave")
    if save is not None and values["save_as"] is None and not config.getoption("bench_no_store"):
        try:
            values["save_as"] = check_baseline_name(str(save))
        except ValueError as exc:
            lines.append(
                f"benchsdk: --benchmark-save {save}: kept as pytest-benchmark's file only, not "
                f"as a baseline name of the results store ({exc})"
            )
    name = save if save is not None else (_autosave_tag(config) if autosave else None)
    if name is not None and folder is not None and not disabled:
        include_data = bool(getattr(config.option, "benchmark_save_data", False))
        values["pytest_benchmark_save"] = (
            folder / f"{_next_number(folder)}_{name}.json",
            include_data,
        )
    compare, given = _foreign(config, "benchmark_compare")
    if given and values["compare"] is None:
        values["compare"] = _saved_ref(compare, folder, storage, lines)
    checks, given = _foreign(config, "benchmark_compare_fail")
    if given and checks:
        if values["compare"] is None:
            raise pytest.UsageError(
                "--benchmark-compare-fail requires a baseline: add --benchmark-compare (or "
                "--bench-compare)"
            )
        rules = []
        for check in checks:
            text = _check_text(check)
            try:
                rules.append(CompareRule.parse(text))
            except ValueError as exc:
                raise pytest.UsageError(f"--benchmark-compare-fail={text}: {exc}") from None
        values["compare_rules"] = (*values["compare_rules"], *rules)


def _check_text(check: object) -> str:
    """A ``--benchmark-compare-fail`` value as text: ours, or pytest-benchmark's check object
    (``field``, ``threshold``, a percentage or a difference)."""
    if isinstance(check, str):
        return check
    field, threshold = getattr(check, "field"), getattr(check, "threshold")  # noqa: B009
    if type(check).__name__.startswith("Percentage"):
        return f"{field}:{threshold}%"
    return f"{field}:{threshold}"


def pytest_benchmark_machine_id() -> str:
    """pytest-benchmark's folder of this machine's runs (``utils.get_machine_id``)."""
    import platform

    return "-".join(
        (
            platform.system(),
            platform.python_implementation(),
            ".".join(platform.python_version_tuple()[:2]),
            platform.architecture()[0],
        )
    )


def _numbered(folder: Path) -> list[Path]:
    """pytest-benchmark's numbered files in ``folder``, oldest first."""
    if not folder.is_dir():
        return []
    return sorted(folder.glob("[0-9][0-9][0-9][0-9]_*.json"), key=lambda f: f.name)


def _next_number(folder: Path) -> str:
    files = _numbered(folder)
    if not files:
        return "0001"
    return f"{int(files[-1].name.split('_')[0]) + 1:04d}"


def _autosave_tag(config: pytest.Config) -> str:
    """pytest-benchmark's ``--benchmark-autosave`` name: ``<commit>_<UTC time>`` and
    ``_uncommited-changes`` (its spelling) when the tree has changes."""
    value = getattr(config.option, "benchmark_autosave", None)
    if isinstance(value, str):
        return value  # pytest-benchmark's own, made when it declared the option
    from datetime import datetime, timezone

    from pytest_benchsdk._base.pbinfo import default_commit_info
    from pytest_benchsdk._base.runenv import git_output

    root = config.rootpath
    info = default_commit_info(
        lambda args: git_output(args, root, os.environ), root.name, os.environ
    )
    parts = [str(info["id"]), datetime.now(timezone.utc).strftime("%Y%m%d_%H%M%S")]
    if info["dirty"]:
        parts.append("uncommited-changes")
    return "_".join(parts)


def _saved_ref(value: object, folder: Path | None, storage: Path | None, lines: list[str]) -> str:
    """``--benchmark-compare[=NUM|NAME]`` as ``--bench-compare``'s REF: the saved file it
    names in pytest-benchmark's storage (the newest of this machine alone), else ``latest``
    (alone, with no file there: a line says so) or a usage error listing the files."""
    if folder is None or storage is None:
        return "latest" if value is True else str(value)
    if value is True:
        files = _numbered(folder)
        if files:
            return str(files[-1])
        lines.append(
            f"benchsdk: --benchmark-compare: no saved run in {folder}; comparing with the latest "
            "run in the results store instead"
        )
        return "latest"
    text = str(value)
    if Path(text).is_file():
        return text
    for found in (
        sorted(folder.glob(f"{text}*.json")),
        sorted(storage.glob(f"*/{text}*.json"), key=lambda f: f.name),
        [f for f in _numbered(folder) if text in f.name.partition("_")[2]],
    ):
        if found:
            return str(found[-1])  # the newest
    there = ", ".join(f.name for f in _numbered(folder)) or "none"
    raise pytest.UsageError(
        f"--benchmark-compare={text}: no saved run matches in {folder} (saved there: {there})"
    )
