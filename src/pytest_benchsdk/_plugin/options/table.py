"""The plugin's options, each declared once: :data:`OPTIONS`.

One :class:`Option` per command-line option (and its ini key) or ini-only key: its flags, how
argparse reads it, its ini key, the value the session gets when nothing is given, the converter
that turns what was given into that value (a name in :data:`.settings.CONVERTERS`, so that this
module imports nothing of the engine), its help, the spelling ``pytest-benchsdk run`` shares,
and its row on the options reference page (``docs/reference/options.md``, generated from this
table by :mod:`.reference`).

pytest imports this module in every session of a project that has the plugin installed: it
holds data only (the standard library and :mod:`pytest_benchsdk._base.defaults`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Final, Literal

from pytest_benchsdk._base.defaults import (
    DEFAULT_AB_MODE,
    DEFAULT_AB_PROCESSES,
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_FAILED_ITERATIONS,
    DEFAULT_INSTRUCTION_CALLS,
    DEFAULT_NOISE_THRESHOLD,
    DEFAULT_RESUBMIT_TIMEOUT_S,
    DEFAULT_SCORE_RESAMPLES,
    DEFAULT_STORE,
    DEFAULT_UPLOAD_TIMEOUT_S,
    DEFAULT_WARNINGS,
)
from pytest_benchsdk._plugin.options import foreign
from pytest_benchsdk._plugin.options.foreign import BENCHMARK, CODSPEED

__all__ = [
    "COMPARE_FAIL_VERDICTS",
    "DOCS_GROUPS",
    "OPTIONS",
    "Option",
    "by_name",
]

#: A bare ``--bench-compare-fail``, spelled out: the comparison's verdicts fail the session.
COMPARE_FAIL_VERDICTS: Final = "verdicts"

#: How an option's value and its ini key's combine: ``fallback``, the ini's when the option is
#: not given (a message names ``<key> (ini)``); ``or``, the option's if truthy, else the ini's
#: (a message names the option); ``extend``, the ini's list then the option's; ``pair``, both,
#: as ``(ini, option)``.
IniRule = Literal["fallback", "or", "extend", "pair"]

#: The reference page's sections, in page order: (key, title).
DOCS_GROUPS: Final = (
    ("run", "What runs"),
    ("knobs", "Knobs"),
    ("output", "Output"),
    ("compare", "Comparisons and A/B"),
    ("verdicts", "Verdicts and warnings"),
    ("store", "Results store"),
    ("platform", "Platform"),
    ("compat", "pytest-benchmark and pytest-codspeed options"),
)


class Option:
    """One option of the plugin: a command-line option, an ini key, or both (a plain class, not a
    dataclass or a named tuple: every pytest session builds the table, and defining either with
    this many fields costs a millisecond or two).

    ``name`` is argparse's ``dest`` (``config.getoption(name)``), or the ini key of an ini-only
    entry. ``field`` names what the parsed settings hold it in: a field of
    :class:`~.settings.BenchOptions`, ``run_args.<field>`` for a run knob, or None where the
    settings combine it with other options themselves (the store, ``--bench``). ``default`` is
    the parsed value when nothing is given; ``convert`` names the converter (see
    :data:`.settings.CONVERTERS`) that turns a given value into the parsed one, its messages
    naming the flag (or ``<key> (ini)``).
    """

    __slots__ = (
        "action",
        "argtype",
        "choices",
        "cli_default",
        "const",
        "convert",
        "default",
        "doc",
        "doc_source",
        "env_fallback",
        "field",
        "flags",
        "group",
        "help",
        "implies_bench",
        "ini",
        "ini_default",
        "ini_doc_default",
        "ini_doc_like",
        "ini_doc_type",
        "ini_help",
        "ini_rule",
        "ini_type",
        "metavar",
        "name",
        "nargs",
        "owner",
        "requires",
        "run_flags",
    )

    def __init__(
        self,
        *,
        name: str,
        flags: tuple[str, ...] = (),
        help: str = "",
        action: Literal["store", "store_true", "store_const", "append"] = "store",
        metavar: str | None = None,
        nargs: Literal["?", "+"] | None = None,
        const: object = None,
        argtype: Callable[[str], Any] | None = None,
        owner: str | None = None,
        choices: tuple[str, ...] | None = None,
        cli_default: object = None,
        ini: str | None = None,
        ini_type: Literal["string", "bool", "args"] = "string",
        ini_default: object = "",
        ini_help: str = "",
        ini_rule: IniRule = "fallback",
        env_fallback: str | None = None,
        field: str | None = None,
        convert: str | None = None,
        default: object = None,
        requires: tuple[str, str] | None = None,
        implies_bench: bool = False,
        run_flags: tuple[str, ...] = (),
        group: str = "run",
        doc: str = "",
        doc_source: str | None = None,
        ini_doc_type: str = "",
        ini_doc_default: str = "none",
        ini_doc_like: str | None = None,
    ) -> None:
        self.name = name
        self.flags = flags
        self.help = help
        # argparse: ``store`` (a value), ``store_true`` (a flag) or ``append`` (repeatable).
        self.action = action
        self.metavar = metavar
        self.nargs = nargs
        self.const = const
        # argparse's ``type``: what the option's text is parsed into (a foreign option's
        # parser, as its plugin's).
        self.argtype = argtype
        # A foreign option's plugin (``benchmark``, ``codspeed``): declared only where that
        # plugin does not declare it itself (see ``foreign.owner_active``).
        self.owner = owner
        self.choices = choices
        # argparse's default: empty, None or False for every option (see ``bench_option_given``).
        self.cli_default = cli_default
        self.ini = ini
        # pytest's ini type: ``string``, ``bool`` or ``args``.
        self.ini_type = ini_type
        self.ini_default = ini_default
        self.ini_help = ini_help
        self.ini_rule = ini_rule
        # An environment variable read when the option is not given (``BENCHMARK_SLUG``).
        self.env_fallback = env_fallback
        self.field = field
        self.convert = convert
        self.default = default
        # Only with this option given (the message says how to add it).
        self.requires = requires
        # Given on the command line, it implies ``--bench`` (see ``IMPLYING_OPTIONS``).
        self.implies_bench = implies_bench
        # The same option of ``pytest-benchsdk run`` (upstream's ``bench run`` spelling).
        self.run_flags = run_flags
        # -- the reference page --
        self.group = group
        # The meaning column (Markdown).
        self.doc = doc
        # The "env / ini" column, when not the ini key (Markdown).
        self.doc_source = doc_source
        # The ini keys table: the value's type, its default and what it is like.
        self.ini_doc_type = ini_doc_type
        self.ini_doc_default = ini_doc_default
        self.ini_doc_like = ini_doc_like

    def __repr__(self) -> str:
        return f"Option(name={self.name!r})"

    @property
    def flag(self) -> str:
        """The name a message gives the option: its first flag, else its ini key."""
        return self.flags[0] if self.flags else f"{self.name} (ini)"


_OWN_OPTIONS: Final[tuple[Option, ...]] = (
    Option(
        name="bench",
        flags=("--bench",),
        action="store_true",
        help="Collect and run benchmark files (ini: bench = true). Without it, bench files are "
        "not collected and a normal test run is unchanged.",
        ini="bench",
        ini_type="bool",
        ini_default=False,
        ini_help="Collect and run benchmark files, like --bench.",
        group="run",
        doc="collect and run bench files (also implied, see [Running](running.md))",
        doc_source="ini `bench = true`",
        ini_doc_type="bool",
        ini_doc_default="`false`",
        ini_doc_like="`--bench`: collect and run bench files in every session",
    ),
    Option(
        name="bench_files",
        ini="bench_files",
        ini_type="args",
        ini_default=["bench_*.py"],
        ini_help="Glob patterns of benchmark files (default: bench_*.py).",
        field="file_patterns",
        convert="patterns",
        default=("bench_*.py",),
        group="run",
        doc="glob patterns of bench files (default `bench_*.py`)",
        ini_doc_type="glob patterns",
        ini_doc_default="`bench_*.py`",
        ini_doc_like="which files are bench files",
    ),
    Option(
        name="bench_provider",
        flags=("--bench-provider",),
        action="append",
        cli_default=[],
        metavar="NAMES",
        help="Run only these participants (repeatable, comma lists). Default: the file's "
        "default_providers, else all.",
        field="run_args.providers",
        convert="providers",
        implies_bench=True,
        run_flags=("--provider",),
        group="run",
        doc="participants to run (repeatable, comma lists); default: the file's "
        "`default_providers`, else all. A name no collected file declares is a usage error "
        "(exit status 4, before anything runs: `ERROR: --bench-provider: Unknown participant(s): "
        "slowstrat. Available: fast, slowstart; did you mean slowstart?`), as is "
        "`--bench-provider ''` (no name at all); a bench file that declares none of the names "
        "does not run, and a line after the collection says so (`benchsdk: --bench-provider "
        "slowstart: bench_b.py does not run (it declares fast, other)`). When no selected "
        "participant has its required env vars, the session says upstream's `No participants "
        "have their required env vars set — nothing to run (skipped: a, b).` once and exits 0",
    ),
    Option(
        name="bench_dry_run",
        flags=("--bench-dry-run", "--bench-no-ingest"),
        action="store_true",
        cli_default=False,
        help="Run and score locally; no platform traffic and no credentials needed "
        "(env BENCHSDK_NO_INGEST=1).",
        field="run_args.no_ingest",
        convert="flag",
        default=False,
        implies_bench=True,
        run_flags=("--no-ingest", "--dry-run"),
        group="run",
        doc="no platform traffic, no credentials needed; scores and the store still work",
        doc_source="`BENCHSDK_NO_INGEST=1` (or `true`)",
    ),
    Option(
        name="bench_iterations",
        flags=("--bench-iterations",),
        metavar="N",
        help="Iterations per participant (with even phases: per phase).",
        field="run_args.iterations",
        convert="positive_int",
        implies_bench=True,
        run_flags=("--iterations",),
        group="knobs",
        doc="iterations per participant; with even phases, per phase (uneven phases ignore it, "
        "with upstream's warning)",
    ),
    Option(
        name="bench_phase_iterations",
        flags=("--bench-phase-iterations",),
        metavar="PHASE=N[,PHASE=N...]",
        help="Size named phases (e.g. cold=2,warm=5): works where --bench-iterations is "
        "ignored (phases sized individually); phases not named keep their size.",
        field="run_args.phase_sizes",
        convert="phase_sizes",
        default=(),
        implies_bench=True,
        group="knobs",
        doc="sizes the named phases (`cold=2,warm=5`: a quick smoke pass, or a larger sample), "
        "also where `--bench-iterations` is ignored; a phase not named keeps its size (with even "
        "phases, `--bench-iterations`' size); the knobs line then ends `phases=cold=2,warm=5`; a "
        "phase no collected benchmark has is a usage error naming the phases",
    ),
    Option(
        name="bench_concurrency",
        flags=("--bench-concurrency",),
        metavar="N",
        help="Iterations in flight at once.",
        field="run_args.concurrency",
        convert="positive_int",
        implies_bench=True,
        run_flags=("--concurrency",),
        group="knobs",
        doc="iterations in flight at once",
    ),
    Option(
        name="bench_stagger_delay_ms",
        flags=("--bench-stagger-delay-ms",),
        metavar="MS",
        help="Start iteration i no earlier than t0 + i*MS (round mode: pause between rounds).",
        field="run_args.stagger_delay_ms",
        convert="non_negative_number",
        implies_bench=True,
        run_flags=("--stagger-delay-ms",),
        group="knobs",
        doc="participant mode: iteration i starts no earlier than `t0 + i × MS`; round mode: "
        "pause between rounds",
    ),
    Option(
        name="bench_group_by",
        flags=("--bench-group-by",),
        metavar="participant|round",
        help="Run each participant's iterations together (participant) or interleave (round).",
        field="run_args.group_by",
        convert="group_by",
        implies_bench=True,
        run_flags=("--group-by",),
        group="knobs",
        doc="run each participant's iterations together, or every participant's i-th before "
        "anyone's i+1-th",
    ),
    Option(
        name="bench_shape",
        flags=("--bench-shape",),
        metavar="NAME",
        help="Use one of the file's named shapes.",
        field="run_args.shape",
        convert="text",
        implies_bench=True,
        run_flags=("--shape",),
        group="knobs",
        doc="use one of the file's `shapes` (slug, name, stagger)",
    ),
    Option(
        name="bench_benchmark",
        flags=("--bench-benchmark",),
        metavar="SLUG",
        help="Report under this benchmark slug (env BENCHMARK_SLUG).",
        env_fallback="BENCHMARK_SLUG",
        field="run_args.benchmark",
        convert="slug",
        implies_bench=True,
        run_flags=("--benchmark", "--slug"),
        group="knobs",
        doc="report under another benchmark slug",
        doc_source="`BENCHMARK_SLUG`",
    ),
    Option(
        name="bench_name",
        flags=("--bench-name",),
        metavar="NAME",
        help="Benchmark display name (env BENCHMARK_NAME).",
        env_fallback="BENCHMARK_NAME",
        field="run_args.name",
        convert="text",
        implies_bench=True,
        run_flags=("--name",),
        group="knobs",
        doc="benchmark display name",
        doc_source="`BENCHMARK_NAME`",
    ),
    Option(
        name="bench_run_key",
        flags=("--bench-run-key",),
        metavar="KEY",
        help="Join (or create) the platform run with this key: several processes share one run.",
        field="run_args.run_key",
        convert="text",
        implies_bench=True,
        run_flags=("--run-key",),
        group="platform",
        doc="join (or create) the keyed platform run: several processes share one run",
    ),
    Option(
        name="bench_instructions",
        flags=("--bench-instructions",),
        action="store_true",
        help="Count the instructions the measured code executes, under Valgrind's callgrind "
        "(the session re-runs itself under valgrind; needs valgrind and a C compiler): each "
        "step, task body and benchmarked test gets the metric instructions, identical from "
        "session to session (ini: bench_instructions).",
        ini="bench_instructions",
        ini_type="bool",
        ini_default=False,
        ini_help="Count instructions under Valgrind's callgrind, like --bench-instructions.",
        ini_rule="or",
        field="instructions",
        convert="flag",
        default=False,
        implies_bench=True,
        group="run",
        doc="count the instructions the measured code executes (Valgrind's callgrind; the "
        "session re-runs itself under `valgrind`, with `PYTHONHASHSEED=0` unless you set one): "
        "each step, task body and benchmarked test records the metric `instructions` (per "
        "call; a task body per iteration), counted only inside the measured region, and "
        "`--bench-compare` judges it by default. A calibrated step or a benchmarked test makes "
        "one warm call, then `--bench-instructions-calls` counted ones. Needs `valgrind` and a "
        "C compiler (a usage error says which is missing)",
        ini_doc_type="bool",
        ini_doc_default="`false`",
    ),
    Option(
        name="bench_instructions_calls",
        flags=("--bench-instructions-calls",),
        metavar="N",
        help="With --bench-instructions: counted calls of a calibrated step or a benchmarked "
        f"test after its warm call (default {DEFAULT_INSTRUCTION_CALLS}; ini: "
        "bench_instructions_calls).",
        ini="bench_instructions_calls",
        ini_help="--bench-instructions-calls' count.",
        field="instructions_calls",
        convert="instruction_calls",
        default=DEFAULT_INSTRUCTION_CALLS,
        group="run",
        doc="with `--bench-instructions`: how many counted calls a calibrated step "
        '(`calls="auto"`) or a benchmarked test makes after its one warm call (default '
        f"{DEFAULT_INSTRUCTION_CALLS}); the count per call is their count divided by N",
        ini_doc_type="integer",
        ini_doc_default=f"`{DEFAULT_INSTRUCTION_CALLS}`",
    ),
    Option(
        name="bench_compare",
        flags=("--bench-compare",),
        nargs="?",
        const="latest",
        metavar="REF",
        help="Compare this run with a baseline. Alone: 'latest' (the newest complete run of the "
        "same benchmark with the same knobs in the store); --bench-compare=REF: a baseline name "
        "(--bench-save), a stored run id or unique prefix, or a --bench-json file. Prints per "
        "participant and metric the change, its interval and a verdict.",
        field="compare",
        convert="compare_ref",
        implies_bench=True,
        group="compare",
        doc="compare with a baseline: alone `latest` (the newest complete run with the same "
        "setup); `=REF` a baseline name, a stored run id or unique prefix, or a `--bench-json` "
        "file, written after `=` (`--bench-compare main` is refused: pytest would take `main` "
        "for a path); resolved before anything runs (see [Baselines](../howto/ci.md#compare-"
        "with-a-baseline))",
    ),
    Option(
        name="bench_save",
        flags=("--bench-save",),
        metavar="NAME",
        help="Keep this run under a baseline name (per benchmark), for --bench-compare=NAME: e.g. "
        "--bench-save main on the main branch (pytest-benchsdk baseline set NAME RUN moves it).",
        field="save_as",
        convert="baseline_name",
        implies_bench=True,
        group="compare",
        doc="keep this session's complete runs under a baseline name, per benchmark "
        "(`--bench-compare=NAME`; `pytest-benchsdk baseline set NAME RUN` moves it)",
    ),
    Option(
        name="bench_history_from",
        flags=("--bench-history-from",),
        metavar="RUN|now",
        help="Start the benchmark's history afresh: 'now' (with this session's run) or RUN (a "
        "stored run id or unique prefix). Earlier runs stay in the store but leave the "
        "between-run noise of --bench-compare and pytest-benchsdk history (e.g. after fixing "
        "the benchmark's own harness).",
        field="history_from",
        convert="history_from",
        implies_bench=True,
        group="compare",
        doc="start the benchmark's history afresh: `now` (with this session's run) or `RUN` "
        "(a stored run id or unique prefix); earlier runs stay in the store but leave the "
        "between-run noise and `pytest-benchsdk history` (see [A fresh history](../howto/ci.md"
        "#start-a-history-afresh))",
    ),
    Option(
        name="bench_columns",
        flags=("--bench-columns",),
        metavar="COL[,COL...]",
        help="Add pytest-benchmark's table to each benchmark's summary, with these columns of "
        "the scored metric's per-participant statistics: min, max, mean, stddev, median, iqr, "
        "ops, rounds, iterations (e.g. min,median,ops; ini: bench_columns).",
        ini="bench_columns",
        ini_help="--bench-columns' columns (comma-separated).",
        field="columns",
        convert="columns",
        default=(),
        group="output",
        doc="add pytest-benchmark's table to each benchmark's summary: the scored metric's "
        "`min`, `max`, `mean`, `stddev`, `median`, `iqr`, `ops` (per second), `rounds`, "
        "`iterations` per participant (an unknown column is a usage error)",
        ini_doc_type="column names, comma-separated",
    ),
    Option(
        name="bench_compare_noise",
        flags=("--bench-compare-noise",),
        metavar="PCT",
        help="With --bench-compare: a change smaller than PCT percent is no change (default 2; "
        "ini: bench_compare_noise).",
        ini="bench_compare_noise",
        ini_help="--bench-compare's noise threshold in percent (default 2).",
        field="compare_noise",
        convert="compare_noise",
        default=DEFAULT_NOISE_THRESHOLD,
        group="compare",
        doc="a change under PCT % is no change (default 2)",
        ini_doc_type="percent",
        ini_doc_default="`2`",
    ),
    Option(
        name="bench_compare_count_noise",
        flags=("--bench-compare-count-noise",),
        metavar="PCT",
        help="With --bench-compare: a count (instructions) that changed by less than PCT "
        "percent did not change (default 0.5; ini: bench_compare_count_noise).",
        ini="bench_compare_count_noise",
        ini_help="--bench-compare's threshold for counts in percent (default 0.5).",
        field="compare_count_noise",
        convert="compare_count_noise",
        default=DEFAULT_COUNT_THRESHOLD,
        group="compare",
        doc="a count (`instructions`, `--bench-instructions`) that changed by less than PCT % "
        "did not change (default 0.5). A count is judged on its own spread within each run "
        "(none when every count is the same) and this threshold, never on the wall-time "
        "history's noise",
        ini_doc_type="percent",
        ini_doc_default="`0.5`",
    ),
    Option(
        name="bench_compare_on",
        flags=("--bench-compare-on",),
        metavar="KEY[,KEY...]",
        help="With --bench-compare: the metrics whose verdicts count for --bench-compare-fail "
        "and the summary, e.g. cpu_ms (default: the scored metrics, or latency_ms when nothing "
        "is scored; instructions with --bench-instructions); the other rows are still shown "
        "(ini: bench_compare_on).",
        ini="bench_compare_on",
        ini_help="--bench-compare-on's metrics (comma-separated).",
        field="compare_on",
        convert="compare_on",
        default=(),
        group="compare",
        doc="the metrics whose verdicts count for `--bench-compare-fail` and the summary, e.g. "
        "`cpu_ms` or `instructions` (default: the scored metrics, or `latency_ms` when nothing is "
        "scored; `instructions` with `--bench-instructions`); the "
        "other rows are still shown, their verdicts in parentheses. A key that no participant "
        "measured is a usage error naming the keys there are (see [Judge what you "
        "choose](../howto/ci.md#judge-what-you-choose---bench-compare-on))",
        ini_doc_type="metric keys, comma-separated",
        ini_doc_default="none (the default rows)",
    ),
    Option(
        name="bench_ab",
        flags=("--bench-ab",),
        metavar="REV",
        help="A/B: run the selected benchmarks against the working tree (B) and against the "
        "git revision REV (A: main, origin/main, HEAD~1, a sha), each iteration on both sides "
        "in a random order per round, and compare them pairwise; with --bench-compare-fail a "
        "regression fails the session. Local only (ini: bench_ab).",
        ini="bench_ab",
        ini_help="--bench-ab's git revision.",
        field="ab",
        convert="stripped",
        implies_bench=True,
        group="compare",
        doc="A/B: run the selected benchmarks against the working tree (side B) and against the "
        "git revision REV (side A: `main`, `origin/main`, `HEAD~1`, a sha, checked out into a "
        "temporary worktree), each iteration (and each benchmarked test, once per process pair) "
        "on both sides in a random order per round, and compare them pairwise; every view shows "
        "the comparison as `--bench-compare`'s, `--bench-compare-fail` fails on a regression. "
        "Local only (nothing is reported to the platform); not with `--bench-compare` or "
        "pytest-xdist (usage errors). See [Is my pull request slower?](../howto/ab.md)",
        ini_doc_type="git revision",
    ),
    Option(
        name="bench_ab_setup",
        flags=("--bench-ab-setup",),
        metavar="CMD",
        help="With --bench-ab: a shell command run once in side A's worktree before the run "
        "(build compiled extensions, e.g. 'pip install -e . --no-deps').",
        field="ab_setup",
        convert="stripped",
        requires=("bench_ab", "is for A/B sessions: add --bench-ab=REV"),
        group="compare",
        doc="with `--bench-ab`: a shell command run once in side A's worktree before the sides "
        "start (build compiled extensions there)",
    ),
    Option(
        name="bench_ab_mode",
        flags=("--bench-ab-mode",),
        choices=("interleaved", "duet"),
        help="With --bench-ab: run each round's two sides one after the other in a random "
        "order (interleaved, the default) or both at once on their own cores (duet).",
        field="ab_mode",
        convert="choice",
        default=DEFAULT_AB_MODE,
        requires=("bench_ab", "is for A/B sessions: add --bench-ab=REV"),
        group="compare",
        doc="with `--bench-ab`: a round's two sides run one after the other in a random order "
        "(`interleaved`, the default) or at the same time, each on a core of its own (`duet`)",
    ),
    Option(
        name="bench_ab_processes",
        flags=("--bench-ab-processes",),
        metavar="N",
        help="With --bench-ab: how many processes each side runs in, taking turns round by "
        "round (default 4; 1 with --bench-instructions, where a count carries no process's "
        "speed): a process's own speed (its memory layout) differs by a few per cent, and the "
        "verdict must not hang on one.",
        field="ab_processes",
        convert="ab_processes",
        default=DEFAULT_AB_PROCESSES,
        requires=("bench_ab", "is for A/B sessions: add --bench-ab=REV"),
        group="compare",
        doc="with `--bench-ab`: each side runs in N processes (default 4, or 1 with "
        "`--bench-instructions`; at most 64) taking "
        "turns round by round (round i in pair i mod N); a benchmarked test runs once in every "
        "pair, each time with its `max_time` divided by N; a process's own speed differs by a "
        "few per cent, and the intervals include that spread",
    ),
    Option(
        name="bench_compare_fail",
        flags=("--bench-compare-fail",),
        action="append",
        nargs="?",
        const=COMPARE_FAIL_VERDICTS,
        metavar="EXPR",
        help="Fail the session when --bench-compare or --bench-ab finds a regression (ini: "
        "bench_compare_fail). --bench-compare-fail=STAT:N%% (or STAT:N seconds; STAT one of "
        "min, max, mean, stddev, median, iqr, ops; repeatable): pytest-benchmark's "
        "expressions, e.g. --bench-compare-fail=min:5%% fails when a participant's minimum "
        "is more than 5 %% above the baseline's.",
        ini="bench_compare_fail",
        ini_type="bool",
        ini_default=False,
        ini_help="Fail the session when --bench-compare finds a regression.",
        ini_rule="pair",
        field="compare_fail",
        convert="compare_fail",
        default=(False, ()),
        group="compare",
        doc="fail the session when `--bench-compare` or `--bench-ab` finds a regression; "
        "`=STAT:N%` or `=STAT:N` (pytest-benchmark's expressions, repeatable; STAT one of "
        "`min`, `max`, `mean`, `stddev`, `median`, `iqr`, `ops`; N in seconds, or operations per "
        "second for `ops`) fails it when a participant's STAT of the scored metric is worse than "
        "the baseline's by more than that, e.g. `--bench-compare-fail=min:5%` (see [Migrate from "
        "pytest-benchmark](../howto/pytest-benchmark.md))",
        ini_doc_type="bool",
        ini_doc_default="`false`",
    ),
    Option(
        name="bench_threshold",
        flags=("--bench-threshold",),
        action="append",
        cli_default=[],
        metavar="KEY: EXPR",
        help="A pass/fail limit per participant, added to every benchmark's thresholds, e.g. "
        '"tti_ms: p95 < 3000", "success_rate: >= 0.99", "score: >= 70", or for one phase '
        '"tti_ms: warm: p95 < 40" (repeatable). Each becomes an item '
        "threshold[<participant>-<key>-<expr>] (with phases, one per phase: "
        "threshold[<participant>-<phase>-<key>-<expr>]).",
        field="run_args.thresholds",
        convert="thresholds",
        default=(),
        implies_bench=True,
        group="verdicts",
        doc="a pass/fail limit added to every benchmark (repeatable; see "
        '[Thresholds](../howto/thresholds-warmup.md#thresholds)); `"KEY: PHASE: EXPR"` judges '
        "one phase (a phase no collected benchmark has is a usage error naming the phases), and "
        "with phases one without a phase is judged per phase; every malformed one is named in "
        "one usage error; a threshold on a key no participant measured (a misspelt "
        "`latncy_ms`) fails its items with what the participant did measure and the closest "
        "key, and ends the session with a usage error (status 4) naming them",
    ),
    Option(
        name="bench_warmup",
        flags=("--bench-warmup",),
        metavar="N",
        help="Warm-up iterations per participant (per phase) run first and never scored, "
        "compared or reported (overrides the file's warmup).",
        field="run_args.warmup",
        convert="non_negative_int",
        implies_bench=True,
        group="knobs",
        doc="warm-up iterations per participant (with phases: per phase, right before it; not "
        "for cold-named phases, and a phase's own `warmup` wins), never scored (see "
        "[Warm-up](../howto/thresholds-warmup.md#warm-up))",
        doc_source="config `warmup`",
    ),
    Option(
        name="bench_score_resamples",
        flags=("--bench-score-resamples",),
        metavar="N",
        help="Bootstrap resamples for the scores' 95 %% intervals and rank stability "
        "(default 200; 0 turns them off).",
        field="score_resamples",
        convert="score_resamples",
        default=DEFAULT_SCORE_RESAMPLES,
        group="verdicts",
        doc="bootstrap resamples of the score intervals (default 200; 0 = off, and with it the "
        "statistics' intervals and the relative summary)",
    ),
    Option(
        name="bench_warnings",
        flags=("--bench-warnings",),
        metavar="warn|full|error|off",
        help="Run-hygiene warnings (few samples for p99, an outlier first iteration, high "
        "variance, a trend, failures): show them, one line per code (warn, the default), "
        "show each in full, every participant's finding and what to do, as -v does (full), "
        "fail the session on them (error), or skip the checks (off). Ini: bench_warnings.",
        ini="bench_warnings",
        ini_help="Run-hygiene warnings: warn (default), full, error, off.",
        ini_rule="or",
        field="warnings",
        convert="warnings_mode",
        default=DEFAULT_WARNINGS,
        group="verdicts",
        doc="run-hygiene warnings: show them one line per code (default), show each in full "
        "(`full`, as `-v`), fail the session, or skip",
        ini_doc_type="`warn` / `full` / `error` / `off`",
        ini_doc_default="`warn`",
    ),
    Option(
        name="bench_failed_iterations",
        flags=("--bench-failed-iterations",),
        metavar="fail|record",
        help="A failed iteration fails the session (fail, the default, pytest's convention) or "
        "is data (record, upstream's rule): its item is still reported failed, but the session "
        "exits 0 unless a threshold, comparison or warning rule fails it. Ini: "
        "bench_failed_iterations.",
        ini="bench_failed_iterations",
        ini_help="Failed iterations: fail (default) or record (they are data; see "
        "--bench-failed-iterations).",
        field="failed_iterations",
        convert="failed_iterations",
        default=DEFAULT_FAILED_ITERATIONS,
        group="verdicts",
        doc="a failed iteration fails the session (`fail`, the default: pytest's convention) or "
        "is data (`record`, upstream's rule): its item is still reported failed and counted in "
        "the summary, but the session exits 0 unless a threshold, a comparison, a warning rule "
        "or another test fails it (see [Differences from upstream](../explanation/upstream.md))",
        ini_doc_type="`fail` / `record`",
        ini_doc_default="`fail`",
    ),
    Option(
        name="bench_warnings_ignore",
        flags=("--bench-warnings-ignore",),
        action="append",
        cli_default=[],
        metavar="CODE[,CODE...]",
        help="Silence these run-hygiene warning codes (repeatable, comma lists), also under "
        "--bench-warnings=error; ini: bench_warnings_ignore.",
        ini="bench_warnings_ignore",
        ini_type="args",
        ini_default=[],
        ini_help="Run-hygiene warning codes to silence (like --bench-warnings-ignore).",
        ini_rule="extend",
        field="warnings_ignore",
        convert="warnings_ignore",
        default=frozenset(),
        group="verdicts",
        doc="silence these warning codes (repeatable), also under `--bench-warnings=error`",
        ini_doc_type="warning codes",
    ),
    Option(
        name="bench_worker_pool",
        flags=("--bench-worker-pool",),
        metavar="N",
        help="With --bench-run-key: spread each participant over N processes (machines) through "
        "the platform. Each process claims one of N workers and runs its share; start N of "
        "them with the same run key (group_by participant only).",
        field="run_args.worker_pool",
        convert="positive_int",
        implies_bench=True,
        run_flags=("--worker-pool",),
        group="platform",
        doc="with `--bench-run-key`: this process is one of N workers of each participant's "
        "platform pool; it claims one worker and runs that worker's share (see [Scaling "
        "out](../howto/xdist.md#scaling-out)). Participant mode only; not with `-n`",
    ),
    Option(
        name="bench_close_after_ms",
        flags=("--bench-close-after-ms",),
        metavar="MS",
        help="Worker pool: the run's close deadline sent by the process that claims the last "
        "worker (default: the file's close_after_ms).",
        field="run_args.close_after_ms",
        convert="non_negative_number",
        implies_bench=True,
        run_flags=("--close-after-ms",),
        group="platform",
        doc="worker pool: the close deadline the process holding the last worker sends when it "
        "closes the run",
        doc_source="config `close_after_ms`",
    ),
    Option(
        name="bench_check",
        flags=("--bench-check",),
        action="store_true",
        cli_default=False,
        help="Validate config, shapes, providers, env and scoring without running; print "
        "the check report and fail when something is wrong.",
        field="check",
        convert="flag",
        default=False,
        implies_bench=True,
        run_flags=("--check", "--validate"),
        group="run",
        doc="validate config, shapes, providers, env, scoring and (outside dry runs) platform "
        "connectivity and credentials without running; print the check report; exit non-zero "
        "when it fails",
    ),
    Option(
        name="bench_arg",
        flags=("--bench-arg",),
        action="append",
        cli_default=[],
        metavar="NAME=VALUE",
        help="Value for a custom flag the file declares in custom_cli_flags "
        "(read in the task as bench.args['NAME']). Repeatable.",
        field="custom_args",
        convert="custom_args",
        default={},
        implies_bench=True,
        group="run",
        doc='value for a flag the file declares in `custom_cli_flags` (`["--file-size"]` → '
        '`--bench-arg file-size=10MB`), read as `bench.args["file-size"]`; an undeclared name '
        "is an error",
    ),
    Option(
        # Read before the session is configured (_plugin/benchmark/providers.py), not by the
        # settings: no field.
        name="bench_benchmark_fixture",
        flags=("--bench-benchmark-fixture",),
        choices=("auto", "benchsdk"),
        help="Which plugin provides the benchmark fixture and marker when pytest-benchmark or "
        "pytest-codspeed is installed too: auto (theirs while they are active, the default) "
        "or benchsdk (this plugin's; pytest-benchmark and pytest-codspeed are switched off "
        "for the session, their --benchmark-*/--codspeed* options still parse). Ini: "
        "bench_benchmark_fixture; env BENCHSDK_BENCHMARK_FIXTURE.",
        ini="bench_benchmark_fixture",
        ini_help="benchsdk: this plugin provides the benchmark fixture and marker, "
        "pytest-benchmark and pytest-codspeed are switched off (auto: theirs while active).",
        group="run",
        doc="with pytest-benchmark or pytest-codspeed installed too: `benchsdk` makes the "
        "`benchmark` fixture and marker this plugin's and switches those plugins off for the "
        "session (as `-p no:benchmark -p no:codspeed` would; their `--benchmark-*` and "
        "`--codspeed*` options still parse, in `addopts` too); `auto` (the default) leaves "
        "the fixture to them while they are active, and the session says the one step once "
        "(see [Migrate from pytest-benchmark](../howto/pytest-benchmark.md#with-pytest-benchmark-"
        "or-pytest-codspeed-installed)). The option wins over the ini key, the ini key over "
        "the environment variable",
        doc_source="ini `bench_benchmark_fixture`, `BENCHSDK_BENCHMARK_FIXTURE`",
        ini_doc_type="`auto` or `benchsdk`",
        ini_doc_default="`auto`",
        ini_doc_like="`--bench-benchmark-fixture`: which plugin's `benchmark` fixture",
    ),
    Option(
        name="bench_json",
        flags=("--bench-json",),
        metavar="PATH",
        help="Write the run (config, records, scores) as JSON.",
        field="json_path",
        convert="output_path",
        implies_bench=True,
        group="output",
        doc="write the run (config snapshot, records, scores, intervals, warnings, comparison, "
        "warm-up records) as JSON",
    ),
    Option(
        name="bench_markdown",
        flags=("--bench-markdown",),
        metavar="PATH",
        help="Write the run summary as GitHub-flavoured Markdown (for a CI job summary: append "
        "it to $GITHUB_STEP_SUMMARY).",
        field="markdown_path",
        convert="output_path",
        implies_bench=True,
        group="output",
        doc="write the run summary as GitHub-flavoured Markdown (see [CI "
        "summaries](../howto/ci.md#ci-summaries---bench-markdown))",
    ),
    Option(
        name="bench_html",
        flags=("--bench-html",),
        metavar="PATH",
        help="Write an offline HTML report of this session's runs (needs the report extra: "
        "pip install 'pytest-benchsdk[report]').",
        field="html_path",
        convert="html_path",
        implies_bench=True,
        group="output",
        doc="write an offline HTML report of the session's runs (needs the `report` extra; see "
        "[HTML report](../howto/html-report.md))",
    ),
    Option(
        name="bench_export",
        flags=("--bench-export",),
        action="append",
        cli_default=[],
        metavar="FORMAT:PATH",
        help="Write the runs' statistics for another tool: gab (github-action-benchmark's "
        "customSmallerIsBetter JSON), gab-bigger (its customBiggerIsBetter), bmf (Bencher "
        "Metric Format), pytest-benchmark (its JSON file, of the benchmarked tests). "
        "Repeatable.",
        field="exports",
        convert="exports",
        default=(),
        implies_bench=True,
        group="output",
        doc="write the runs' statistics for another tool: `gab` / `gab-bigger` "
        "(github-action-benchmark), `bmf` (Bencher), `pytest-benchmark` (its JSON file, of "
        "the benchmarked tests); repeatable (see [Exports for other "
        "tools](../howto/exports.md#exports-for-other-tools---bench-export))",
    ),
    Option(
        name="bench_store",
        flags=("--bench-store",),
        metavar="PATH",
        help=f"Local results store (SQLite). Default: {DEFAULT_STORE} under the rootdir "
        "(ini: bench_store).",
        ini="bench_store",
        ini_help=f"Local results store path (default: {DEFAULT_STORE}).",
        default=DEFAULT_STORE,
        run_flags=("--store",),
        group="store",
        doc=f"local results store (default `{DEFAULT_STORE}` under the rootdir)",
        ini_doc_type="path (relative to the ini file's directory)",
        ini_doc_default=f"`{DEFAULT_STORE}` under the rootdir",
        ini_doc_like="`--bench-store`; the `pytest-benchsdk` commands read it too",
    ),
    Option(
        name="bench_no_store",
        flags=("--bench-no-store",),
        action="store_true",
        cli_default=False,
        help="Do not write the local results store.",
        run_flags=("--no-store",),
        group="store",
        doc="do not write the store",
    ),
    Option(
        name="bench_base_url",
        flags=("--bench-base-url",),
        metavar="URL",
        help="Benchmarks platform root URL (env BENCHMARKS_PLATFORM_URL; default "
        "https://platform.computesdk.com).",
        field="base_url",
        convert="base_url",
        run_flags=("--base-url",),
        group="platform",
        doc="platform root URL (default `https://platform.computesdk.com`); must be an http(s) "
        "URL with a host, anything else (`notaurl`) is a usage error",
        doc_source="`BENCHMARKS_PLATFORM_URL`",
    ),
    Option(
        name="bench_api_key",
        flags=("--bench-api-key",),
        metavar="KEY",
        help="Platform API key (prefer env BENCHMARKS_PLATFORM_API_KEY: a command line is "
        "visible to other users of the machine).",
        field="api_key",
        convert="or_none",
        run_flags=("--api-key",),
        group="platform",
        doc="platform credentials (see [Credentials](../howto/platform.md#credentials))",
        doc_source="`BENCHMARKS_PLATFORM_API_KEY`, `BENCHMARKS_PLATFORM_TOKEN`",
    ),
    Option(
        name="bench_org",
        flags=("--bench-org",),
        metavar="SLUG",
        help="Platform organization to report to (sent as X-Org-Slug; ini: bench_org; default: "
        "~/.benchsdk/config.json's org, else the saved login's).",
        ini="bench_org",
        ini_help="Platform organization slug to report to (like --bench-org).",
        ini_rule="or",
        field="org",
        convert="stripped",
        group="platform",
        doc="the platform organisation to report to (upstream's `--org`, sent as `X-Org-Slug`); "
        "default: `org` in `~/.benchsdk/config.json`, else the saved login's",
        ini_doc_type="slug",
        ini_doc_default="the saved login's",
    ),
    Option(
        name="bench_resubmit",
        flags=("--bench-resubmit",),
        action="store_true",
        cli_default=False,
        help="Send what earlier runs left unsent in the local store's outbox; runs no benchmark.",
        field="resubmit",
        convert="flag",
        default=False,
        group="platform",
        doc="send what earlier sessions left unsent in the store's outbox (also the records of a "
        "killed session); runs no benchmark",
    ),
    Option(
        name="bench_strict_upload",
        flags=("--bench-strict-upload",),
        action="store_true",
        help="Fail the session when results could not be delivered to the platform "
        "(ini: bench_strict_upload).",
        ini="bench_strict_upload",
        ini_type="bool",
        ini_default=False,
        ini_help="Fail the session when results could not be delivered to the platform.",
        ini_rule="or",
        field="strict_upload",
        convert="flag",
        default=False,
        group="platform",
        doc="fail the session when results could not be delivered to the platform",
        ini_doc_type="bool",
        ini_doc_default="`false`",
    ),
    Option(
        name="bench_upload_timeout",
        flags=("--bench-upload-timeout",),
        metavar="SECONDS",
        help="How long the session end waits for platform deliveries before leaving the rest "
        "to --bench-resubmit (default 30; ini: bench_upload_timeout).",
        ini="bench_upload_timeout",
        ini_help="Seconds the session end waits for platform deliveries (default 30).",
        field="upload_timeout_s",
        convert="upload_timeout",
        default=DEFAULT_UPLOAD_TIMEOUT_S,
        group="platform",
        doc="how long the session end waits for platform deliveries before leaving the rest to "
        "`--bench-resubmit` (default 30)",
        ini_doc_type="seconds",
        ini_doc_default="`30`",
    ),
    Option(
        name="bench_resubmit_to_other_platform",
        flags=("--bench-resubmit-to-other-platform",),
        action="store_true",
        cli_default=False,
        help="With --bench-resubmit: send runs that were reported to another platform URL or "
        "org to this one (their whole lifecycle is replayed there).",
        field="resubmit_other_platform",
        convert="flag",
        default=False,
        group="platform",
        doc="with `--bench-resubmit`: send runs that were reported to another platform URL or "
        "org to this one (the whole run is replayed)",
    ),
    Option(
        name="bench_resubmit_timeout",
        flags=("--bench-resubmit-timeout",),
        metavar="SECONDS",
        help="With --bench-resubmit: how long it may deliver; at the deadline a request in "
        "flight is abandoned and what is unsent stays in the outbox (default 300; ini: "
        "bench_resubmit_timeout).",
        ini="bench_resubmit_timeout",
        ini_help="Seconds --bench-resubmit may deliver (default 300).",
        field="resubmit_timeout_s",
        convert="resubmit_timeout",
        default=DEFAULT_RESUBMIT_TIMEOUT_S,
        group="platform",
        doc="with `--bench-resubmit`: how long it may deliver; at the deadline a request in "
        "flight is abandoned and what is unsent stays in the outbox (default 300)",
        ini_doc_type="seconds",
        ini_doc_default="`300`",
    ),
    Option(
        name="bench_resubmit_rejected",
        flags=("--bench-resubmit-rejected",),
        action="store_true",
        cli_default=False,
        help="With --bench-resubmit: send uploads the platform rejected before again.",
        field="resubmit_rejected",
        convert="flag",
        default=False,
        group="platform",
        doc="with `--bench-resubmit`: send uploads the platform rejected before again",
    ),
)


#: pytest-benchmark's default file name prefix (``benchmark_<UTC time>``) of
#: ``--benchmark-histogram`` and ``--benchmark-cprofile-dump`` given alone.
_PREFIX: Final = f"benchmark_{datetime.now(timezone.utc).strftime('%Y%m%d_%H%M%S')}"


def _rounds(
    key: str, flag: str, metavar: str | None, convert: str, what: str, like: str, **extra: Any
) -> Option:
    """A session-wide setting of the benchmark fixture's rounds (``--bench-rounds-*`` and its
    ini key ``bench_rounds_*``): the default beneath each test's ``@pytest.mark.benchmark``."""
    name = "bench_rounds_" + flag.removeprefix("--bench-rounds-").replace("-", "_")
    return Option(
        name=name,
        flags=(flag,),
        action="store_true" if metavar is None else "store",
        metavar=metavar,
        help=f"Benchmarked tests: {what} (the marker's {key}= wins per test; ini: {name}; "
        f"pytest-benchmark: {like}).",
        ini=name,
        ini_type="bool" if metavar is None else "string",
        ini_default=False if metavar is None else "",
        ini_help=f"Benchmarked tests' {key} (like {flag}).",
        ini_rule="or" if metavar is None else "fallback",
        field=f"rounds.{key}",
        convert=convert,
        implies_bench=True,
        group="knobs",
        ini_doc_type="bool" if metavar is None else extra.pop("ini_doc_type", ""),
        ini_doc_default=extra.pop("ini_doc_default", "pytest-benchmark's"),
        **extra,
    )


#: The benchmark fixture's rounds settings for the whole session (pytest-benchmark's
#: ``--benchmark-min-rounds`` … and pytest-codspeed's ``--codspeed-max-rounds`` … map onto them).
ROUNDS_OPTIONS: Final[tuple[Option, ...]] = (
    _rounds(
        "min_rounds",
        "--bench-rounds-min",
        "N",
        "rounds_count",
        "at least N rounds (default 5)",
        "--benchmark-min-rounds",
        doc="benchmarked tests: at least N rounds each, even past the max time (default 5)",
        ini_doc_type="integer",
        ini_doc_default="`5`",
    ),
    _rounds(
        "max_rounds",
        "--bench-rounds-max",
        "N",
        "rounds_count",
        "at most N rounds (default: as many as the max time holds)",
        "none; pytest-codspeed: --codspeed-max-rounds",
        doc="benchmarked tests: at most N rounds each (pytest-codspeed's `max_rounds`; wins over "
        "the min rounds and the max time)",
        ini_doc_type="integer",
        ini_doc_default="none",
    ),
    _rounds(
        "min_time",
        "--bench-rounds-min-time",
        "SECONDS",
        "rounds_seconds",
        "a round lasts at least SECONDS (calibrated; default 0.000005)",
        "--benchmark-min-time",
        doc="benchmarked tests: each round's calls last at least SECONDS (the calibration "
        "raises the calls per round; default 0.000005)",
        ini_doc_type="seconds",
        ini_doc_default="`0.000005`",
    ),
    _rounds(
        "max_time",
        "--bench-rounds-max-time",
        "SECONDS",
        "rounds_seconds",
        "rounds for about SECONDS per test (default 1.0)",
        "--benchmark-max-time",
        doc="benchmarked tests: rounds for about SECONDS per test (default 1.0; the min rounds "
        "run anyway)",
        ini_doc_type="seconds",
        ini_doc_default="`1.0`",
    ),
    _rounds(
        "timer",
        "--bench-rounds-timer",
        "MODULE.FUNC",
        "rounds_timer",
        "the clock a round is timed with (default time.perf_counter)",
        "--benchmark-timer",
        doc="benchmarked tests: the clock a round is timed with, by its dotted name (default "
        "`time.perf_counter`)",
        ini_doc_type="dotted name",
        ini_doc_default="`time.perf_counter`",
    ),
    _rounds(
        "calibration_precision",
        "--bench-rounds-calibration-precision",
        "N",
        "rounds_count",
        "calibrate rounds to N times the timer's resolution (default 10)",
        "--benchmark-calibration-precision",
        doc="benchmarked tests: a round lasts at least N times the timer's resolution (default 10)",
        ini_doc_type="integer",
        ini_doc_default="`10`",
    ),
    _rounds(
        "warmup",
        "--bench-rounds-warmup",
        "on|off",
        "rounds_warmup",
        "warm up before the rounds (default off)",
        "--benchmark-warmup",
        doc="benchmarked tests: warm-up calls before the rounds, at most the warm-up "
        "iterations and the max time (`on`/`off`, also `true`/`false`; default off)",
        ini_doc_type="`on` / `off`",
        ini_doc_default="`off`",
    ),
    _rounds(
        "warmup_iterations",
        "--bench-rounds-warmup-iterations",
        "N",
        "rounds_warmup_iterations",
        "at most N warm-up calls (default 100000)",
        "--benchmark-warmup-iterations",
        doc="benchmarked tests: at most N warm-up calls (default 100000)",
        ini_doc_type="integer",
        ini_doc_default="`100000`",
    ),
    _rounds(
        "disable_gc",
        "--bench-rounds-disable-gc",
        None,
        "rounds_flag",
        "the garbage collector off during the rounds",
        "--benchmark-disable-gc",
        doc="benchmarked tests: the garbage collector is off during the rounds",
        ini_doc_default="`false`",
    ),
)


def _pb(
    flag: str,
    doc: str,
    *,
    implies_bench: bool = False,
    owner: str = BENCHMARK,
    **argparse: Any,
) -> Option:
    """A foreign option: its flag, ``dest`` and argparse settings as its plugin declares
    it (``pytest_benchmark/plugin.py``, ``pytest_codspeed/plugin.py``), and what it does here
    (``doc``); the settings map it (:mod:`.settings`)."""
    name = flag.removeprefix("--").replace("-", "_")
    plugin = foreign.distribution(owner)
    return Option(
        name=name,
        flags=(flag,),
        help=f"{plugin}'s option; here: {doc.replace('`', '')}.".replace("%", "%%"),
        owner=owner,
        implies_bench=implies_bench,
        group="compat",
        doc=doc,
        doc_source=plugin,
        **argparse,
    )


#: pytest-benchmark 5.1's options (its ``benchmark`` group) and pytest-codspeed 5's, each with
#: what it does here.
FOREIGN_OPTIONS: Final[tuple[Option, ...]] = (
    _pb(
        "--benchmark-min-time",
        "`--bench-rounds-min-time`",
        implies_bench=True,
        metavar="SECONDS",
        argtype=foreign.parse_seconds,
        cli_default="0.000005",
    ),
    _pb(
        "--benchmark-max-time",
        "`--bench-rounds-max-time`",
        implies_bench=True,
        metavar="SECONDS",
        argtype=foreign.parse_seconds,
        cli_default="1.0",
    ),
    _pb(
        "--benchmark-min-rounds",
        "`--bench-rounds-min`",
        implies_bench=True,
        metavar="NUM",
        argtype=foreign.parse_rounds,
        cli_default=5,
    ),
    _pb(
        "--benchmark-timer",
        "`--bench-rounds-timer`",
        implies_bench=True,
        metavar="FUNC",
        argtype=foreign.parse_timer,
        cli_default="time.perf_counter",
    ),
    _pb(
        "--benchmark-calibration-precision",
        "`--bench-rounds-calibration-precision`",
        implies_bench=True,
        metavar="NUM",
        argtype=foreign.parse_int,
        cli_default=10,
    ),
    _pb(
        "--benchmark-warmup",
        "`--bench-rounds-warmup` (alone: on; `auto`: on under PyPy)",
        implies_bench=True,
        metavar="KIND",
        nargs="?",
        argtype=foreign.parse_warmup,
        cli_default=False,
    ),
    _pb(
        "--benchmark-warmup-iterations",
        "`--bench-rounds-warmup-iterations`",
        implies_bench=True,
        metavar="NUM",
        argtype=foreign.parse_int,
        cli_default=100000,
    ),
    _pb(
        "--benchmark-disable-gc",
        "`--bench-rounds-disable-gc`",
        implies_bench=True,
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--benchmark-skip",
        "selection: the benchmarked tests (the fixture, the marker, bench files) are "
        "deselected, in any session",
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--benchmark-only",
        "selection: only the benchmarked tests run (the others are deselected; wins over "
        "`--benchmark-skip`); on the command line it implies `--bench`",
        implies_bench=True,
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--benchmark-disable",
        "benchmarked tests call their function once, measured by nothing and kept in no run "
        "(what they do without `--bench`), also under `--bench`; not with `--benchmark-only`",
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--benchmark-enable",
        "`--bench` (and it undoes `--benchmark-disable`), from the command line or `addopts`",
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--benchmark-save",
        "`--bench-save NAME`, and pytest-benchmark's file `STORAGE/<machine>/NNNN_NAME.json` "
        "(NNNN the next number; without `--benchmark-save-data`, no `data`)",
        implies_bench=True,
        metavar="NAME",
        argtype=foreign.parse_save,
    ),
    _pb(
        "--benchmark-autosave",
        "pytest-benchmark's file `STORAGE/<machine>/NNNN_<commit>_<date>[_uncommited-changes]"
        ".json` (the run is in the results store anyway)",
        implies_bench=True,
        action="store_const",
        const=True,
    ),
    _pb(
        "--benchmark-save-data",
        "the saved file holds every round's time (`stats.data`), as the `--benchmark-json` file "
        "always does",
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--benchmark-json",
        "`--bench-export pytest-benchmark:PATH` (pytest-benchmark's schema, every round's time)",
        implies_bench=True,
        metavar="PATH",
    ),
    _pb(
        "--benchmark-compare",
        "`--bench-compare=FILE`: alone, the newest `NNNN_*.json` of this machine in STORAGE "
        "(none: the store's latest run, said in one line); `=NUM` or a part of a name, the "
        "newest file it finds there (none: a usage error listing the files); tests are matched "
        "by `fullname`",
        implies_bench=True,
        metavar="NUM|_ID",
        nargs="?",
        const=True,
        cli_default=[],
    ),
    _pb(
        "--benchmark-compare-fail",
        "`--bench-compare-fail=EXPR` (each `FIELD:N%` or `FIELD:SECONDS`, pytest-benchmark's "
        "forms); without `--benchmark-compare` or `--bench-compare` a usage error, as there",
        implies_bench=True,
        metavar="EXPR",
        nargs="+",
        argtype=foreign.parse_compare_fail,
    ),
    _pb(
        "--benchmark-storage",
        "where `--benchmark-save`/`-autosave` write and `--benchmark-compare` reads "
        "(`file://PATH`, or a plain path; default `./.benchmarks`); `elasticsearch+…`: one "
        "line at the session start says it has no meaning here (the runs are in the results "
        "store, `--bench-store`)",
        metavar="URI",
        cli_default="file://./.benchmarks",
    ),
    _pb(
        "--benchmark-netrc",
        "for Elasticsearch storage only: one line at the session start says it has no meaning "
        "here (platform credentials: `BENCHMARKS_PLATFORM_API_KEY`)",
        nargs="?",
        const="~/.netrc",
        cli_default="",
    ),
    _pb(
        "--benchmark-verbose",
        "the summary as under `-v` (every warning's paragraph, the per-test detail)",
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--benchmark-quiet",
        "the summary as under `-q` (one line per benchmark); `--benchmark-verbose` wins",
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--benchmark-sort",
        "the order of the rows of pytest-benchmark's table (`--bench-columns`): `min`, `max`, "
        "`mean`, `stddev` (ascending), `name`, `fullname`; the ranking stays by score",
        metavar="COL",
        argtype=foreign.parse_sort,
        cli_default="min",
    ),
    _pb(
        "--benchmark-group-by",
        "which benchmarked tests make one benchmark (one run, scored and compared together): "
        "`group` (the marker's or `benchmark.group`, else the module), `name`, `fullname`, "
        "`func`, `fullfunc`, `param`, `param:NAME`, or several with commas",
        metavar="LABEL",
        cli_default="group",
    ),
    _pb(
        "--benchmark-columns",
        "`--bench-columns` (pytest-benchmark's table in each benchmark's summary; `outliers` "
        "too); its default (every column) adds no table",
        metavar="LABELS",
        argtype=foreign.parse_columns,
        cli_default=list(foreign.DEFAULT_COLUMNS),
    ),
    _pb(
        "--benchmark-name",
        "`long`: the table's rows are named by each test's full node id; `short`: without "
        "`test_`; `normal`, `trial`: by the name in the summary (its node id after the module)",
        metavar="FORMAT",
        argtype=foreign.parse_name_format,
        cli_default="normal",
    ),
    _pb(
        "--benchmark-histogram",
        "`--bench-html PREFIX.html`: the HTML report (its charts are the histograms; needs the "
        "`report` extra, else one line says so)",
        implies_bench=True,
        action="append",
        metavar="FILENAME-PREFIX",
        nargs="?",
        const=_PREFIX,
        cli_default=[],
    ),
    _pb(
        "--benchmark-cprofile",
        "after its rounds, one more call of each benchmarked test under cProfile: the top "
        "functions by COLUMN in the summary (under `-v` or `--benchmark-verbose`) and in the "
        "`--benchmark-json` file (`cprofile`, beside `stats`)",
        implies_bench=True,
        metavar="COLUMN",
        choices=(
            "ncalls_recursion",
            "ncalls",
            "tottime",
            "tottime_per",
            "cumtime",
            "cumtime_per",
            "function_name",
        ),
    ),
    _pb(
        "--benchmark-cprofile-loops",
        "with `--benchmark-cprofile`: profiled calls (`auto`: 1)",
        metavar="LOOPS",
        argtype=foreign.parse_cprofile_loops,
        cli_default=1,
    ),
    _pb(
        "--benchmark-cprofile-top",
        "with `--benchmark-cprofile`: how many functions are kept",
        metavar="COUNT",
        argtype=foreign.parse_int,
        cli_default=25,
    ),
    _pb(
        "--benchmark-cprofile-dump",
        "with `--benchmark-cprofile`: each test's profile also in `PREFIX-<test>.prof` "
        "(`pstats` reads it)",
        action="append",
        metavar="FILENAME-PREFIX",
        nargs="?",
        const=_PREFIX,
        cli_default=[],
    ),
    _pb(
        "--benchmark-time-unit",
        "the unit of the time columns of pytest-benchmark's table (`--bench-columns`); `auto` "
        "(the default) picks one per value",
        metavar="COLUMN",
        choices=("ns", "us", "ms", "s", "auto"),
    ),
    _pb(
        "--codspeed",
        "`--bench`",
        owner=CODSPEED,
        implies_bench=True,
        action="store_true",
        cli_default=False,
    ),
    _pb(
        "--codspeed-mode",
        "`instrumentation` or `simulation`: `--bench-instructions` (Valgrind's instruction "
        "counts); `walltime`: the default timing; `memory`: the default timing, and one line "
        "says memory is not measured here",
        owner=CODSPEED,
        implies_bench=True,
        choices=("instrumentation", "simulation", "memory", "walltime"),
    ),
    _pb(
        "--codspeed-warmup-time",
        "`--bench-rounds-warmup` on when SECONDS > 0 (off at 0), lasting at most SECONDS in "
        "all, as pytest-codspeed's: the calibration's warm-up and the warm-up rounds stop when "
        "SECONDS have passed since the calibration began (or at the warm-up iterations)",
        owner=CODSPEED,
        implies_bench=True,
        metavar="SECONDS",
        argtype=foreign.parse_float,
    ),
    _pb(
        "--codspeed-max-time",
        "`--bench-rounds-max-time`",
        owner=CODSPEED,
        implies_bench=True,
        metavar="SECONDS",
        argtype=foreign.parse_float,
    ),
    _pb(
        "--codspeed-max-rounds",
        "`--bench-rounds-max`",
        owner=CODSPEED,
        implies_bench=True,
        metavar="N",
        argtype=foreign.parse_int,
    ),
)

#: Every option, each declared once.
OPTIONS: Final[tuple[Option, ...]] = (*_OWN_OPTIONS, *ROUNDS_OPTIONS, *FOREIGN_OPTIONS)


def by_name(name: str) -> Option:
    """The entry named ``name`` (argparse's dest, or an ini-only key)."""
    for option in OPTIONS:
        if option.name == name:
            return option
    raise KeyError(name)
