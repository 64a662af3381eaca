"""The plugin's options parsed and validated once into :class:`BenchOptions` (a bad value is a
:class:`pytest.UsageError` naming its flag). Imported only when a ``--bench*`` option is set or
bench files are run (see :mod:`pytest_benchsdk._plugin.options`)."""

from __future__ import annotations

import difflib
import importlib.util
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import attrs
import pytest

from pytest_benchsdk._analysis.baseline import CompareRule
from pytest_benchsdk._analysis.hygiene import WARNING_CODES
from pytest_benchsdk._base.defaults import (
    DEFAULT_NOISE_THRESHOLD,
    DEFAULT_SCORE_RESAMPLES,
    DEFAULT_UPLOAD_TIMEOUT_S,
)
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
from pytest_benchsdk._plugin.options import bench_enabled
from pytest_benchsdk._session import (
    SessionOptions,
    parse_failed_iterations,
    unwritable_reason,
)

__all__ = ["BenchOptions"]


@attrs.frozen(kw_only=True)
class BenchOptions(SessionOptions):
    """The plugin's options after validation: the session's (:class:`SessionOptions`, what
    the engine-side session runs with) and what only the glue reads."""

    enabled: bool
    file_patterns: tuple[str, ...]
    check: bool
    custom_args: Mapping[str, str]
    resubmit: bool = False
    resubmit_other_platform: bool = False
    resubmit_rejected: bool = False
    #: ``--bench-ab=REV``: the git revision side A runs (None: no A/B session).
    ab: str | None = None
    #: ``--bench-ab-setup CMD``: run once in side A's worktree before the sides start.
    ab_setup: str | None = None
    #: ``--bench-ab-mode``: ``interleaved`` (one side after the other) or ``duet`` (both at
    #: once).
    ab_mode: str = "interleaved"
    #: ``--bench-ab-processes``: processes per side, taking turns round by round.
    ab_processes: int = 4

    @classmethod
    def from_config(
        cls, config: pytest.Config, environ: Mapping[str, str] | None = None
    ) -> BenchOptions:
        """Parse and validate; a bad value raises :class:`pytest.UsageError` with its flag."""
        env = os.environ if environ is None else environ
        opt = config.getoption
        file_patterns = tuple(config.getini("bench_files"))
        enabled = bench_enabled(config)
        try:
            run_args = _run_args(config, env)
            custom_args = _custom_args(opt("bench_arg"))
            base_url = _base_url(opt("bench_base_url"))
            upload_timeout_s = _upload_timeout(config)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        store_path: Path | None = None
        store_origin = "--bench-store"
        if not opt("bench_no_store"):
            # The CLI finds the ini itself and resolves with the same rule (_base/storepath).
            ini_dir = config.inipath.parent if config.inipath else config.rootpath
            location = resolve_store(
                opt("bench_store"),
                flag="--bench-store",
                given_base=config.rootpath,
                ini=IniFile(ini_dir, config.inipath, str(config.getini("bench_store")).strip()),
                rootdir=config.rootpath,
                rootdir_words="the rootdir",
            )
            store_path, store_origin = location.path, location.origin
        json_path = _output_path(opt("bench_json"), "--bench-json")
        markdown_path = _output_path(opt("bench_markdown"), "--bench-markdown")
        html_path = _html_path(opt("bench_html"))
        exports = _exports(opt("bench_export"))
        save_as = _save_name(opt("bench_save"), store_path)
        ab, ab_setup, ab_mode, ab_processes = _ab(config)
        compare_fail, compare_rules = _compare_fail(config)
        return cls(
            enabled=enabled,
            file_patterns=file_patterns,
            run_args=run_args,
            # An A/B session is local: neither side is reported to the platform.
            dry_run=run_args.no_ingest or ab is not None,
            check=bool(opt("bench_check")),
            custom_args=custom_args,
            json_path=json_path,
            store_path=store_path,
            store_origin=store_origin,
            base_url=base_url,
            api_key=opt("bench_api_key") or None,
            org=(opt("bench_org") or config.getini("bench_org") or "").strip() or None,
            resubmit=bool(opt("bench_resubmit")),
            strict_upload=bool(opt("bench_strict_upload") or config.getini("bench_strict_upload")),
            upload_timeout_s=upload_timeout_s,
            compare=_compare_ref(opt("bench_compare")),
            markdown_path=markdown_path,
            score_resamples=_score_resamples(opt("bench_score_resamples")),
            warnings=_warnings_mode(opt("bench_warnings") or config.getini("bench_warnings")),
            compare_fail=compare_fail,
            compare_rules=compare_rules,
            resubmit_other_platform=bool(opt("bench_resubmit_to_other_platform")),
            resubmit_rejected=bool(opt("bench_resubmit_rejected")),
            html_path=html_path,
            exports=exports,
            failed_iterations=_failed_iterations(config),
            save_as=save_as,
            compare_noise=_compare_noise(config),
            compare_on=_compare_on(config),
            columns=_columns(config),
            warnings_ignore=_warnings_ignore(config),
            ab=ab,
            ab_setup=ab_setup,
            ab_mode=ab_mode,
            ab_processes=ab_processes,
        )


def _ab(config: pytest.Config) -> tuple[str | None, str | None, str, int]:
    """``--bench-ab=REV`` (or the ini's), ``--bench-ab-setup`` and ``--bench-ab-mode``;
    refused with ``--bench-compare`` and with pytest-xdist (the A/B session runs both sides
    itself)."""
    raw = config.getoption("bench_ab")
    if raw is None:
        raw = config.getini("bench_ab")
    revision = str(raw or "").strip() or None
    setup = str(config.getoption("bench_ab_setup") or "").strip() or None
    mode = config.getoption("bench_ab_mode")
    raw_processes = config.getoption("bench_ab_processes")
    if revision is None:
        for flag, given in (
            ("--bench-ab-setup", setup),
            ("--bench-ab-mode", mode),
            ("--bench-ab-processes", raw_processes),
        ):
            if given is not None:
                raise pytest.UsageError(f"{flag} is for A/B sessions: add --bench-ab=REV")
        return None, None, "interleaved", 4
    processes = 4
    if raw_processes is not None:
        try:
            processes = parse_positive_int("--bench-ab-processes", str(raw_processes), 64)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
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
    return revision, setup, mode or "interleaved", processes


def _save_name(raw: object, store_path: Path | None) -> str | None:
    """``--bench-save NAME``: a valid baseline name, and a store to keep it in."""
    if raw is None:
        return None
    from pytest_benchsdk.results import check_baseline_name

    try:
        name = check_baseline_name(str(raw).strip())
    except ValueError as exc:
        raise pytest.UsageError(f"--bench-save: {exc}") from None
    if store_path is None:
        raise pytest.UsageError(
            f"--bench-save {name} keeps the run's name in the results store: it cannot be used "
            "with --bench-no-store"
        )
    return name


def _compare_noise(config: pytest.Config) -> float:
    """``--bench-compare-noise PCT`` (or the ini's): a percentage >= 0, ``2`` or ``2%``."""
    raw, flag = config.getoption("bench_compare_noise"), "--bench-compare-noise"
    if raw is None:
        raw, flag = config.getini("bench_compare_noise"), "bench_compare_noise (ini)"
    text = str(raw or "").strip().removesuffix("%").strip()
    if not text:
        return DEFAULT_NOISE_THRESHOLD
    try:
        percent = float(text)
    except ValueError:
        percent = -1.0
    if not (percent >= 0 and percent < 100):
        raise pytest.UsageError(
            f'{flag} expects a percentage >= 0 and < 100, e.g. 2 or 2.5% (got "{raw}")'
        )
    return percent / 100


def _compare_on(config: pytest.Config) -> tuple[str, ...]:
    """``--bench-compare-on KEY[,KEY...]`` (or the ini's): metric keys, each once, in order.
    Whether a participant measured each is known only once the run has: the session end
    says so (a usage error naming the keys there are)."""
    raw, flag = config.getoption("bench_compare_on"), "--bench-compare-on"
    if raw is None:
        raw, flag = config.getini("bench_compare_on"), "bench_compare_on (ini)"
    keys = [key.strip() for key in str(raw or "").split(",")]
    if any(not key for key in keys) and any(keys):
        raise pytest.UsageError(f'{flag} expects metric keys separated by commas (got "{raw}")')
    return tuple(dict.fromkeys(key for key in keys if key))


def _compare_fail(config: pytest.Config) -> tuple[bool, tuple[CompareRule, ...]]:
    """``--bench-compare-fail`` (bare, or the ini's: the verdicts fail the session) and its
    ``=STAT:LIMIT`` expressions, every malformed one named in one usage error."""
    from pytest_benchsdk._plugin.options import COMPARE_FAIL_VERDICTS

    given = config.getoption("bench_compare_fail") or []
    verdicts = bool(config.getini("bench_compare_fail"))
    rules: list[CompareRule] = []
    problems: list[str] = []
    for raw in given:
        if raw is True or raw == COMPARE_FAIL_VERDICTS:
            verdicts = True
            continue
        try:
            rules.append(CompareRule.parse(str(raw)))
        except ValueError as exc:
            problems.append(f"--bench-compare-fail={raw}: {exc}")
    if problems:
        raise pytest.UsageError("\n".join(problems))
    return verdicts, tuple(rules)


def _columns(config: pytest.Config) -> tuple[str, ...]:
    """``--bench-columns COL[,COL...]`` (or the ini's): pytest-benchmark's column names."""
    from pytest_benchsdk._views.text import COLUMNS

    raw, flag = config.getoption("bench_columns"), "--bench-columns"
    if raw is None:
        raw, flag = config.getini("bench_columns"), "bench_columns (ini)"
    names = [name.strip().lower() for name in str(raw or "").split(",") if name.strip()]
    unknown = [name for name in names if name not in COLUMNS]
    if unknown:
        raise pytest.UsageError(
            f"{flag}: unknown column(s) {', '.join(unknown)} (the columns: {', '.join(COLUMNS)})"
        )
    return tuple(dict.fromkeys(names))


def _warnings_ignore(config: pytest.Config) -> frozenset[str]:
    """``--bench-warnings-ignore`` and the ini's codes, each a known warning code."""
    given = [*config.getini("bench_warnings_ignore"), *config.getoption("bench_warnings_ignore")]
    codes = [code.strip() for raw in given for code in str(raw).split(",") if code.strip()]
    for code in codes:
        if code not in WARNING_CODES:
            close = [c for c in WARNING_CODES if c.startswith(code)] or (
                difflib.get_close_matches(code, WARNING_CODES, n=1, cutoff=0.5)
            )
            hint = f"; did you mean {close[0]}?" if close else ""
            raise pytest.UsageError(
                f'--bench-warnings-ignore: unknown warning code "{code}" (codes: '
                f"{', '.join(WARNING_CODES)}){hint}"
            )
    return frozenset(codes)


def _html_path(raw: object) -> Path | None:
    """``--bench-html PATH``: a writable file path, and plotly installed (the report extra)."""
    path = _output_path(raw, "--bench-html")
    if path is None:
        return None
    try:
        found = importlib.util.find_spec("plotly") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise pytest.UsageError("--bench-html needs plotly: pip install 'pytest-benchsdk[report]'")
    return path


def _exports(raws: Sequence[object] | None) -> tuple[tuple[str, Path], ...]:
    """``--bench-export FORMAT:PATH``, each checked now: a known format, a writable path."""
    from pytest_benchsdk._views.exports import EXPORT_FORMATS

    found: list[tuple[str, Path]] = []
    for raw in raws or ():
        text = str(raw)
        fmt, sep, where = text.partition(":")
        fmt = fmt.strip().lower()
        if not sep or not where:
            raise pytest.UsageError(
                f"--bench-export expects FORMAT:PATH, e.g. gab:benchmark.json (got {text!r}); "
                f"formats: {', '.join(EXPORT_FORMATS)}"
            )
        if fmt not in EXPORT_FORMATS:
            raise pytest.UsageError(
                f"--bench-export {text}: unknown format {fmt!r}; expected one of "
                f"{', '.join(EXPORT_FORMATS)}"
            )
        path = Path(where).absolute()
        problem = unwritable_reason(path)
        if problem is not None:
            raise pytest.UsageError(f"--bench-export {text}: {problem}")
        if any(path == other for _, other in found):
            raise pytest.UsageError(f"--bench-export {text}: {where} is given twice")
        found.append((fmt, path))
    return tuple(found)


def _base_url(raw: object) -> str | None:
    """``--bench-base-url``: an http(s) URL with a host, else a usage error (not a long
    transient wait at the end of the session)."""
    if raw is None or str(raw).strip() == "":
        return None
    value = str(raw).strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"--bench-base-url expects an http(s) URL with a host, like "
            f'https://platform.computesdk.com (got "{redact_url(value)}")'
        )
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise ValueError(
            f'--bench-base-url has an invalid port (got "{redact_url(value)}")'
        ) from None
    return value


def _upload_timeout(config: pytest.Config) -> float:
    raw = config.getoption("bench_upload_timeout")
    flag = "--bench-upload-timeout"
    if raw is None:
        raw = config.getini("bench_upload_timeout")
        flag = "bench_upload_timeout (ini)"
    if raw is None or str(raw).strip() == "":
        return DEFAULT_UPLOAD_TIMEOUT_S
    return float(parse_non_negative_number(flag, str(raw)))


def _run_args(config: pytest.Config, env: Mapping[str, str]) -> RunArgs:
    opt = config.getoption

    def value(name: str) -> str | None:
        raw = opt(name)
        return None if raw is None else str(raw)

    benchmark = value("bench_benchmark")
    if benchmark is None and env.get("BENCHMARK_SLUG"):
        benchmark = env["BENCHMARK_SLUG"]
    name = value("bench_name")
    if name is None and env.get("BENCHMARK_NAME"):
        name = env["BENCHMARK_NAME"]
    iterations = value("bench_iterations")
    concurrency = value("bench_concurrency")
    stagger = value("bench_stagger_delay_ms")
    group_by = value("bench_group_by")
    shape = value("bench_shape")
    run_key = value("bench_run_key")
    providers = opt("bench_provider")
    warmup = value("bench_warmup")
    pool = value("bench_worker_pool")
    close_after = value("bench_close_after_ms")
    worker_pool = None if pool is None else parse_positive_int("--bench-worker-pool", pool)
    if worker_pool is not None and run_key is None:
        raise ValueError("--bench-worker-pool requires --bench-run-key")
    return RunArgs(
        benchmark=None if benchmark is None else parse_slug("--bench-benchmark", benchmark),
        name=None if name is None else parse_text("--bench-name", name),
        shape=None if shape is None else parse_text("--bench-shape", shape),
        run_key=None if run_key is None else parse_text("--bench-run-key", run_key),
        iterations=(
            None if iterations is None else parse_positive_int("--bench-iterations", iterations)
        ),
        concurrency=(
            None if concurrency is None else parse_positive_int("--bench-concurrency", concurrency)
        ),
        stagger_delay_ms=(
            None
            if stagger is None
            else parse_non_negative_number("--bench-stagger-delay-ms", stagger)
        ),
        group_by=None if group_by is None else parse_group_by("--bench-group-by", group_by),
        providers=parse_providers(providers) if providers else None,
        no_ingest=bool(opt("bench_dry_run")) or is_env_no_ingest(env),
        worker_pool=worker_pool,
        thresholds=parse_cli_thresholds(opt("bench_threshold") or ()),
        phase_sizes=_phase_sizes(value("bench_phase_iterations")),
        warmup=None if warmup is None else parse_non_negative_int("--bench-warmup", warmup),
        close_after_ms=(
            None
            if close_after is None
            else parse_non_negative_number("--bench-close-after-ms", close_after)
        ),
    )


def _phase_sizes(raw: str | None) -> tuple[tuple[str, int], ...]:
    """``--bench-phase-iterations cold=2,warm=5``: ``(phase, iterations)`` pairs."""
    if raw is None:
        return ()
    flag = "--bench-phase-iterations"
    sizes: dict[str, int] = {}
    for part in raw.split(","):
        name, sep, count = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(
                f'{flag} expects PHASE=N[,PHASE=N...], e.g. "cold=2,warm=5" (got "{raw}")'
            )
        if name in sizes:
            raise ValueError(f'{flag} names the phase {name!r} twice (got "{raw}")')
        sizes[name] = parse_positive_int(f"{flag} {name}", count.strip())
    return tuple(sizes.items())


def _output_path(raw: object, flag: str) -> Path | None:
    """A file the session writes at its end, checked now (a usage error, not a lost result)."""
    if not raw:
        return None
    path = Path(str(raw)).absolute()
    problem = unwritable_reason(path)
    if problem is not None:
        raise pytest.UsageError(f"{flag} {raw}: {problem}")
    return path


def _score_resamples(raw: object) -> int:
    if raw is None:
        return DEFAULT_SCORE_RESAMPLES
    text = str(raw).strip()
    if not text.isdigit():
        raise pytest.UsageError(f'--bench-score-resamples expects an integer >= 0 (got "{raw}")')
    return int(text)


def _failed_iterations(config: pytest.Config) -> str:
    raw = config.getoption("bench_failed_iterations")
    flag = "--bench-failed-iterations"
    if raw is None:
        raw = config.getini("bench_failed_iterations")
        flag = "bench_failed_iterations (ini)"
    if raw is None or str(raw).strip() == "":
        return "fail"
    try:
        return parse_failed_iterations(flag, str(raw))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _warnings_mode(raw: object) -> str:
    text = str(raw or "warn").strip().lower()
    if text not in ("warn", "error", "off"):
        raise pytest.UsageError(f'--bench-warnings expects warn, error or off (got "{raw}")')
    return text


def _compare_ref(raw: object) -> str | None:
    if raw is None:
        return None
    text = str(raw).strip()
    if not text:
        raise pytest.UsageError(
            "--bench-compare= expects a REF: 'latest', a baseline name, a stored run id or a "
            "--bench-json file (got ''); --bench-compare alone means latest"
        )
    return text


def _custom_args(values: list[str]) -> dict[str, str]:
    args: dict[str, str] = {}
    for raw in values:
        name, sep, val = raw.partition("=")
        name = name.strip().lstrip("-")
        if not sep or not name:
            raise ValueError(f'--bench-arg expects NAME=VALUE (got "{raw}")')
        args[name] = val
    return args
