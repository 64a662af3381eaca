"""Command-line and ini options of the plugin, parsed once into :class:`BenchOptions`."""

from __future__ import annotations

import difflib
import importlib.util
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import attrs
import pytest

from pytest_benchsdk._analysis.hygiene import WARNING_CODES
from pytest_benchsdk._base.defaults import (
    DEFAULT_NOISE_THRESHOLD,
    DEFAULT_SCORE_RESAMPLES,
    DEFAULT_STORE,
    DEFAULT_UPLOAD_TIMEOUT_S,
)
from pytest_benchsdk._config.thresholds import parse_cli_threshold
from pytest_benchsdk._engine.benchfile import is_bench_path
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
from pytest_benchsdk._session import (
    SessionOptions,
    parse_failed_iterations,
    unwritable_reason,
)

__all__ = [
    "IMPLYING_OPTIONS",
    "BenchOptions",
    "add_options",
    "bench_option_given",
    "n_without_dist",
    "note_dist_choice",
    "spell_out_compare",
    "unwritable_reason",
]

#: Options that only make sense for benchmarks: given on the command line, each implies
#: ``--bench``. Not from the ini's ``addopts`` or ``PYTEST_ADDOPTS`` (kept there, e.g. to keep
#: every run offline, they must not turn a test run into a bench run), and not the options
#: that configure where results go (store, platform, upload), which may well sit there too.
#: ``--bench-check`` implies ``--bench`` wherever it comes from (it runs nothing else).
IMPLYING_OPTIONS = (
    "--bench-provider",
    "--bench-dry-run",
    "--bench-no-ingest",
    "--bench-check",
    "--bench-iterations",
    "--bench-concurrency",
    "--bench-stagger-delay-ms",
    "--bench-group-by",
    "--bench-shape",
    "--bench-arg",
    "--bench-json",
    "--bench-markdown",
    "--bench-html",
    "--bench-export",
    "--bench-compare",
    "--bench-save",
    "--bench-threshold",
    "--bench-warmup",
    "--bench-run-key",
    "--bench-worker-pool",
    "--bench-close-after-ms",
    "--bench-benchmark",
    "--bench-name",
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("benchsdk", "benchmarks (pytest-benchsdk)")
    add = group.addoption
    add(
        "--bench",
        action="store_true",
        default=None,
        help="Collect and run benchmark files (ini: bench = true). Without it, bench files are "
        "not collected and a normal test run is unchanged.",
    )
    add(
        "--bench-provider",
        action="append",
        default=[],
        metavar="NAMES",
        help="Run only these participants (repeatable, comma lists). Default: the file's "
        "default_providers, else all.",
    )
    add(
        "--bench-dry-run",
        "--bench-no-ingest",
        dest="bench_dry_run",
        action="store_true",
        default=False,
        help="Run and score locally; no platform traffic and no credentials needed "
        "(env BENCHSDK_NO_INGEST=1).",
    )
    add(
        "--bench-iterations",
        metavar="N",
        help="Iterations per participant (with even phases: per phase).",
    )
    add("--bench-concurrency", metavar="N", help="Iterations in flight at once.")
    add(
        "--bench-stagger-delay-ms",
        metavar="MS",
        help="Start iteration i no earlier than t0 + i*MS (round mode: pause between rounds).",
    )
    add(
        "--bench-group-by",
        metavar="participant|round",
        help="Run each participant's iterations together (participant) or interleave (round).",
    )
    add("--bench-shape", metavar="NAME", help="Use one of the file's named shapes.")
    add(
        "--bench-benchmark",
        metavar="SLUG",
        help="Report under this benchmark slug (env BENCHMARK_SLUG).",
    )
    add("--bench-name", metavar="NAME", help="Benchmark display name (env BENCHMARK_NAME).")
    add(
        "--bench-run-key",
        metavar="KEY",
        help="Join (or create) the platform run with this key: several processes share one run.",
    )
    add(
        "--bench-compare",
        nargs="?",
        const="latest",
        default=None,
        metavar="REF",
        help="Compare this run with a baseline. Alone: 'latest' (the newest complete run of the "
        "same benchmark with the same knobs in the store); --bench-compare=REF: a baseline name "
        "(--bench-save), a stored run id or unique prefix, or a --bench-json file. Prints per "
        "participant and metric the change, its interval and a verdict.",
    )
    add(
        "--bench-save",
        metavar="NAME",
        help="Keep this run under a baseline name (per benchmark), for --bench-compare=NAME: e.g. "
        "--bench-save main on the main branch (pytest-benchsdk baseline set NAME RUN moves it).",
    )
    add(
        "--bench-compare-noise",
        metavar="PCT",
        help="With --bench-compare: a change smaller than PCT percent is no change (default 2; "
        "ini: bench_compare_noise).",
    )
    parser.addini(
        "bench_compare_noise",
        default="",
        help="--bench-compare's noise threshold in percent (default 2).",
    )
    add(
        "--bench-compare-fail",
        action="store_true",
        default=None,
        help="Fail the session when --bench-compare finds a regression (ini: bench_compare_fail).",
    )
    parser.addini(
        "bench_compare_fail",
        type="bool",
        default=False,
        help="Fail the session when --bench-compare finds a regression.",
    )
    add(
        "--bench-threshold",
        action="append",
        default=[],
        metavar="KEY: EXPR",
        help="A pass/fail limit per participant, added to every benchmark's thresholds, e.g. "
        '"tti_ms: p95 < 3000", "success_rate: >= 0.99", "score: >= 70" (repeatable). Each '
        "becomes an item threshold[<participant>-<key>-<expr>].",
    )
    add(
        "--bench-warmup",
        metavar="N",
        help="Warm-up iterations per participant (per phase) run first and never scored, "
        "compared or reported (overrides the file's warmup).",
    )
    add(
        "--bench-score-resamples",
        metavar="N",
        help="Bootstrap resamples for the scores' 95 %% intervals and rank stability "
        "(default 200; 0 turns them off).",
    )
    add(
        "--bench-warnings",
        metavar="warn|error|off",
        help="Run-hygiene warnings (few samples for p99, an outlier first iteration, high "
        "variance, a trend, failures): show them (warn, the default), fail the session on "
        "them (error), or skip the checks (off). Ini: bench_warnings.",
    )
    parser.addini(
        "bench_warnings", default="", help="Run-hygiene warnings: warn (default), error, off."
    )
    add(
        "--bench-failed-iterations",
        metavar="fail|record",
        help="A failed iteration fails the session (fail, the default, pytest's convention) or "
        "is data (record, upstream's rule): its item is still reported failed, but the session "
        "exits 0 unless a threshold, comparison or warning rule fails it. Ini: "
        "bench_failed_iterations.",
    )
    parser.addini(
        "bench_failed_iterations",
        default="",
        help="Failed iterations: fail (default) or record (they are data; see "
        "--bench-failed-iterations).",
    )
    add(
        "--bench-warnings-ignore",
        action="append",
        default=[],
        metavar="CODE[,CODE...]",
        help="Silence these run-hygiene warning codes (repeatable, comma lists), also under "
        "--bench-warnings=error; ini: bench_warnings_ignore.",
    )
    parser.addini(
        "bench_warnings_ignore",
        type="args",
        default=[],
        help="Run-hygiene warning codes to silence (like --bench-warnings-ignore).",
    )
    add(
        "--bench-worker-pool",
        metavar="N",
        help="With --bench-run-key: spread each participant over N processes (machines) through "
        "the platform. Each process claims one of N workers and runs its share; start N of "
        "them with the same run key (group_by participant only).",
    )
    add(
        "--bench-close-after-ms",
        metavar="MS",
        help="Worker pool: the run's close deadline sent by the process that claims the last "
        "worker (default: the file's close_after_ms).",
    )
    add(
        "--bench-check",
        action="store_true",
        default=False,
        help="Validate config, shapes, providers, env and scoring without running; print "
        "the check report and fail when something is wrong.",
    )
    add(
        "--bench-arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Value for a custom flag the file declares in custom_cli_flags "
        "(read in the task as bench.args['NAME']). Repeatable.",
    )
    add("--bench-json", metavar="PATH", help="Write the run (config, records, scores) as JSON.")
    add(
        "--bench-markdown",
        metavar="PATH",
        help="Write the run summary as GitHub-flavoured Markdown (for a CI job summary: append "
        "it to $GITHUB_STEP_SUMMARY).",
    )
    add(
        "--bench-html",
        metavar="PATH",
        help="Write an offline HTML report of this session's runs (needs the report extra: "
        "pip install 'pytest-benchsdk[report]').",
    )
    add(
        "--bench-export",
        action="append",
        default=[],
        metavar="FORMAT:PATH",
        help="Write the runs' statistics for another tool: gab (github-action-benchmark's "
        "customSmallerIsBetter JSON), gab-bigger (its customBiggerIsBetter), bmf (Bencher "
        "Metric Format). Repeatable.",
    )
    add(
        "--bench-store",
        metavar="PATH",
        help=f"Local results store (SQLite). Default: {DEFAULT_STORE} under the rootdir "
        "(ini: bench_store).",
    )
    add(
        "--bench-no-store",
        action="store_true",
        default=False,
        help="Do not write the local results store.",
    )
    add(
        "--bench-base-url",
        metavar="URL",
        help="Benchmarks platform root URL (env BENCHMARKS_PLATFORM_URL; default "
        "https://platform.computesdk.com).",
    )
    add(
        "--bench-api-key",
        metavar="KEY",
        help="Platform API key (prefer env BENCHMARKS_PLATFORM_API_KEY: a command line is "
        "visible to other users of the machine).",
    )
    add(
        "--bench-org",
        metavar="SLUG",
        help="Platform organization to report to (sent as X-Org-Slug; ini: bench_org; default: "
        "~/.benchsdk/config.json's org, else the saved login's).",
    )
    parser.addini(
        "bench_org", default="", help="Platform organization slug to report to (like --bench-org)."
    )
    add(
        "--bench-resubmit",
        action="store_true",
        default=False,
        help="Send what earlier runs left unsent in the local store's outbox; runs no benchmark.",
    )
    add(
        "--bench-strict-upload",
        action="store_true",
        default=None,
        help="Fail the session when results could not be delivered to the platform "
        "(ini: bench_strict_upload).",
    )
    add(
        "--bench-upload-timeout",
        metavar="SECONDS",
        help="How long the session end waits for platform deliveries before leaving the rest "
        "to --bench-resubmit (default 30; ini: bench_upload_timeout).",
    )
    parser.addini(
        "bench_upload_timeout",
        default="",
        help="Seconds the session end waits for platform deliveries (default 30).",
    )
    parser.addini(
        "bench_strict_upload",
        type="bool",
        default=False,
        help="Fail the session when results could not be delivered to the platform.",
    )
    parser.addini(
        "bench", type="bool", default=False, help="Collect and run benchmark files, like --bench."
    )
    parser.addini(
        "bench_files",
        type="args",
        default=["bench_*.py"],
        help="Glob patterns of benchmark files (default: bench_*.py).",
    )
    parser.addini(
        "bench_store", default="", help=f"Local results store path (default: {DEFAULT_STORE})."
    )
    # -- resubmit: other platform, rejected uploads (issue 9, platform side) --
    add(
        "--bench-resubmit-to-other-platform",
        action="store_true",
        default=False,
        help="With --bench-resubmit: send runs that were reported to another platform URL or "
        "org to this one (their whole lifecycle is replayed there).",
    )
    add(
        "--bench-resubmit-rejected",
        action="store_true",
        default=False,
        help="With --bench-resubmit: send uploads the platform rejected before again.",
    )


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

    @classmethod
    def from_config(
        cls, config: pytest.Config, environ: Mapping[str, str] | None = None
    ) -> BenchOptions:
        """Parse and validate; a bad value raises :class:`pytest.UsageError` with its flag."""
        env = os.environ if environ is None else environ
        opt = config.getoption
        file_patterns = tuple(config.getini("bench_files"))
        enabled = bool(
            opt("bench")
            or config.getini("bench")
            or opt("bench_check")
            or _implying_option(config.invocation_params.args)
            or _names_bench_file(config, file_patterns)
        )
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
            raw = opt("bench_store")
            if not raw and config.getini("bench_store"):
                raw = config.getini("bench_store")
                store_origin = f"bench_store in {config.inipath or 'the ini file'}"
            elif not raw:
                raw = DEFAULT_STORE
                store_origin = f"the default, {DEFAULT_STORE} under the rootdir"
            store_path = Path(raw)
            if not store_path.is_absolute():
                store_path = config.rootpath / store_path
        json_path = _output_path(opt("bench_json"), "--bench-json")
        markdown_path = _output_path(opt("bench_markdown"), "--bench-markdown")
        html_path = _html_path(opt("bench_html"))
        exports = _exports(opt("bench_export"))
        save_as = _save_name(opt("bench_save"), store_path)
        return cls(
            enabled=enabled,
            file_patterns=file_patterns,
            run_args=run_args,
            dry_run=run_args.no_ingest,
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
            compare_fail=bool(opt("bench_compare_fail") or config.getini("bench_compare_fail")),
            resubmit_other_platform=bool(opt("bench_resubmit_to_other_platform")),
            resubmit_rejected=bool(opt("bench_resubmit_rejected")),
            html_path=html_path,
            exports=exports,
            failed_iterations=_failed_iterations(config),
            save_as=save_as,
            compare_noise=_compare_noise(config),
            warnings_ignore=_warnings_ignore(config),
        )


def spell_out_compare(args: list[str]) -> None:
    """Rewrite a bare ``--bench-compare`` in ``args`` (in place) as ``--bench-compare=latest``.

    argparse gives an optional argument the next word when it does not look like an option, so
    ``pytest --bench-compare bench_a.py`` would compare with a baseline named ``bench_a.py`` and
    run every file; a REF is named with ``=`` only. Words after ``--`` are left alone."""
    for index, arg in enumerate(args):
        if arg == "--":
            return
        if arg == "--bench-compare":
            args[index] = "--bench-compare=latest"


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


_N_WITHOUT_DIST = pytest.StashKey[bool]()


def note_dist_choice(config: pytest.Config) -> None:
    """Before pytest-xdist reads ``-n`` (it turns ``--dist no`` into ``load``): remember
    whether ``-n`` came without ``--dist``, where bench files get ``--dist loadgroup``."""
    option = config.option
    dist = getattr(option, "dist", None)
    given = dist not in (None, "no") or bool(getattr(option, "distload", False))
    config.stash[_N_WITHOUT_DIST] = bool(getattr(option, "numprocesses", None)) and not given


def n_without_dist(config: pytest.Config) -> bool:
    """Whether ``-n`` came without ``--dist`` (see :func:`note_dist_choice`)."""
    return config.stash.get(_N_WITHOUT_DIST, False)


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


def bench_option_given(config: pytest.Config) -> bool:
    """Whether any ``--bench*`` option is set, from wherever (the command line, ``addopts``,
    ``PYTEST_ADDOPTS``): every default is empty, ``None`` or ``False``. (pytest-benchmark's
    options are ``benchmark_*``, which this does not match.)"""
    return any(value for name, value in vars(config.option).items() if name.startswith("bench_"))


def _implying_option(args: Sequence[object]) -> str | None:
    """The first option of :data:`IMPLYING_OPTIONS` among the command-line arguments (pytest's
    parser takes no abbreviations, so the spelled-out forms are all there is)."""
    for raw in args:
        arg = str(raw)
        if arg == "--":
            break
        name = arg.partition("=")[0]
        if name in IMPLYING_OPTIONS:
            return name
    return None


def _names_bench_file(config: pytest.Config, patterns: tuple[str, ...]) -> str | None:
    """The first command-line argument (a path or a node id) that names a bench file: pytest
    collects any file you name, so a bench file named there is collected as a bench file."""
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        return None  # testpaths or the invocation directory: nothing was named
    for arg in config.args:
        path = Path(str(arg).partition("::")[0])
        named = path.suffix == ".py" and is_bench_path(path, patterns)
        if named and not (config.invocation_params.dir / path).is_dir():
            return str(arg)
    return None


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
            f'https://platform.computesdk.com (got "{value}")'
        )
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise ValueError(f'--bench-base-url has an invalid port (got "{value}")') from None
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
        thresholds=tuple(parse_cli_threshold(text) for text in opt("bench_threshold") or ()),
        warmup=None if warmup is None else parse_non_negative_int("--bench-warmup", warmup),
        close_after_ms=(
            None
            if close_after is None
            else parse_non_negative_number("--bench-close-after-ms", close_after)
        ),
    )


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
