"""The plugin's command-line and ini options: their definitions, and whether the session is a
bench session at all.

pytest imports this module in every session of a project that has the plugin installed, so it
imports nothing of the engine: :func:`bench_enabled` decides from the raw options whether the
plugin is needed, and only then does :mod:`pytest_benchsdk._plugin.settings` parse and validate
them into :class:`~pytest_benchsdk._plugin.settings.BenchOptions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_benchsdk._base.defaults import DEFAULT_STORE
from pytest_benchsdk._base.files import is_bench_path

__all__ = [
    "IMPLYING_OPTIONS",
    "add_options",
    "bench_enabled",
    "bench_option_given",
    "n_without_dist",
    "note_dist_choice",
    "spell_out_compare",
]

#: A bare ``--bench-compare-fail``, spelled out: the comparison's verdicts fail the session.
COMPARE_FAIL_VERDICTS = "verdicts"

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
    "--bench-phase-iterations",
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
    "--bench-ab",
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
    add(
        "--bench-phase-iterations",
        metavar="PHASE=N[,PHASE=N...]",
        help="Size named phases (e.g. cold=2,warm=5): works where --bench-iterations is "
        "ignored (phases sized individually); phases not named keep their size.",
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
        "--bench-columns",
        metavar="COL[,COL...]",
        help="Add pytest-benchmark's table to each benchmark's summary, with these columns of "
        "the scored metric's per-participant statistics: min, max, mean, stddev, median, iqr, "
        "ops, rounds, iterations (e.g. min,median,ops; ini: bench_columns).",
    )
    parser.addini("bench_columns", default="", help="--bench-columns' columns (comma-separated).")
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
        "--bench-compare-on",
        metavar="KEY[,KEY...]",
        help="With --bench-compare: the metrics whose verdicts count for --bench-compare-fail "
        "and the summary, e.g. cpu_ms (default: the scored metrics, or latency_ms when nothing "
        "is scored); the other rows are still shown (ini: bench_compare_on).",
    )
    parser.addini(
        "bench_compare_on",
        default="",
        help="--bench-compare-on's metrics (comma-separated).",
    )
    add(
        "--bench-ab",
        metavar="REV",
        help="A/B: run the selected benchmarks against the working tree (B) and against the "
        "git revision REV (A: main, origin/main, HEAD~1, a sha), each iteration on both sides "
        "in a random order per round, and compare them pairwise; with --bench-compare-fail a "
        "regression fails the session. Local only (ini: bench_ab).",
    )
    parser.addini("bench_ab", default="", help="--bench-ab's git revision.")
    add(
        "--bench-ab-setup",
        metavar="CMD",
        help="With --bench-ab: a shell command run once in side A's worktree before the run "
        "(build compiled extensions, e.g. 'pip install -e . --no-deps').",
    )
    add(
        "--bench-ab-mode",
        choices=("interleaved", "duet"),
        default=None,
        help="With --bench-ab: run each round's two sides one after the other in a random "
        "order (interleaved, the default) or both at once on their own cores (duet).",
    )
    add(
        "--bench-ab-processes",
        metavar="N",
        help="With --bench-ab: how many processes each side runs in, taking turns round by "
        "round (default 4): a process's own speed (its memory layout) differs by a few per "
        "cent, and the verdict must not hang on one.",
    )
    add(
        "--bench-compare-fail",
        action="append",
        nargs="?",
        const=COMPARE_FAIL_VERDICTS,
        default=None,
        metavar="EXPR",
        help="Fail the session when --bench-compare or --bench-ab finds a regression (ini: "
        "bench_compare_fail). --bench-compare-fail=STAT:N%% (or STAT:N seconds; STAT one of "
        "min, max, mean, stddev, median, iqr, ops; repeatable): pytest-benchmark's "
        "expressions, e.g. --bench-compare-fail=min:5%% fails when a participant's minimum "
        "is more than 5 %% above the baseline's.",
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
        '"tti_ms: p95 < 3000", "success_rate: >= 0.99", "score: >= 70", or for one phase '
        '"tti_ms: warm: p95 < 40" (repeatable). Each becomes an item '
        "threshold[<participant>-<key>-<expr>] (with phases, one per phase: "
        "threshold[<participant>-<phase>-<key>-<expr>]).",
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


def spell_out_compare(args: list[str]) -> None:
    """Rewrite a bare ``--bench-compare`` in ``args`` (in place) as ``--bench-compare=latest``,
    and a bare ``--bench-compare-fail`` as ``--bench-compare-fail=verdicts``.

    argparse gives an optional argument the next word when it does not look like an option, so
    ``pytest --bench-compare bench_a.py`` would compare with a baseline named ``bench_a.py`` and
    run every file; a REF is named with ``=`` only. Words after ``--`` are left alone."""
    for index, arg in enumerate(args):
        if arg == "--":
            return
        if arg == "--bench-compare":
            args[index] = "--bench-compare=latest"
        elif arg == "--bench-compare-fail":
            # A bare flag (the verdicts fail the session); an expression is given with "=".
            args[index] = f"--bench-compare-fail={COMPARE_FAIL_VERDICTS}"


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


def bench_enabled(config: pytest.Config) -> bool:
    """Whether this is a bench session: ``--bench``, the ini's ``bench = true``,
    ``--bench-check``, an option of :data:`IMPLYING_OPTIONS` on the command line, or a
    command-line argument that names a bench file."""
    return bool(
        config.getoption("bench")
        or config.getini("bench")
        or config.getoption("bench_check")
        or _implying_option(config.invocation_params.args)
        or _names_bench_file(config, tuple(config.getini("bench_files")))
    )
