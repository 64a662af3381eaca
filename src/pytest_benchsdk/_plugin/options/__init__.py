"""The plugin's command-line and ini options: registered from the option table
(:mod:`.table`, each option declared once), and whether the session is a bench session at all.

pytest imports this package in every session of a project that has the plugin installed, so it
and :mod:`.table` import nothing of the engine: :func:`bench_enabled` decides from the raw
options whether the plugin is needed, and only then does :mod:`.settings` parse and validate
them into :class:`~pytest_benchsdk._plugin.options.settings.BenchOptions` (each entry through the
converter it names). :mod:`.reference` renders the options reference page from the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from pytest_benchsdk._base.files import is_bench_path
from pytest_benchsdk._plugin.options.foreign import owner_active
from pytest_benchsdk._plugin.options.table import COMPARE_FAIL_VERDICTS, OPTIONS, Option

__all__ = [
    "COMPARE_FAIL_VERDICTS",
    "IMPLYING_OPTIONS",
    "add_options",
    "bench_enabled",
    "bench_option_given",
    "foreign_mapped",
    "n_without_dist",
    "note_dist_choice",
    "spell_out_compare",
]

#: Options that only make sense for benchmarks (the table's ``implies_bench``): given on the
#: command line, each implies ``--bench``. Not from the ini's ``addopts`` or ``PYTEST_ADDOPTS``
#: (kept there, e.g. to keep every run offline, they must not turn a test run into a bench
#: run), and not the options that configure where results go (store, platform, upload), which
#: may well sit there too. ``--bench-check`` implies ``--bench`` wherever it comes from (it runs
#: nothing else).
IMPLYING_OPTIONS = tuple(
    flag for option in OPTIONS if option.implies_bench and not option.owner for flag in option.flags
)
#: The foreign options (pytest-benchmark's, pytest-codspeed's) that imply ``--bench`` on the
#: command line as those above, where this plugin maps them: ``{flag: owner}``.
FOREIGN_IMPLYING = {
    flag: option.owner
    for option in OPTIONS
    if option.implies_bench and option.owner
    for flag in option.flags
}

#: The ``pytest --help`` groups of the foreign options (their plugins' own).
_FOREIGN_GROUPS = {
    "benchmark": ("benchmark", "benchmark (pytest-benchmark's options, read by pytest-benchsdk)"),
    "codspeed": (
        "CodSpeed benchmarking",
        "CodSpeed benchmarking (pytest-codspeed's options, read by pytest-benchsdk)",
    ),
}


def add_options(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Register every entry of the option table: its command-line option in the plugin's group
    of ``pytest --help``, and its ini key. A foreign option (pytest-benchmark's,
    pytest-codspeed's) is declared only where its plugin will not declare it itself."""
    group = parser.getgroup("benchsdk", "benchmarks (pytest-benchsdk)")
    active: dict[str, bool] = {}
    for option in OPTIONS:
        target = group
        if option.owner is not None:
            if option.owner not in active:
                active[option.owner] = owner_active(pluginmanager, option.owner)
            if active[option.owner]:
                continue
            target = parser.getgroup(*_FOREIGN_GROUPS[option.owner])
        if option.flags:
            target.addoption(*option.flags, help=option.help, **_argparse(option))
        if option.ini is not None:
            parser.addini(
                option.ini,
                help=option.ini_help,
                type=option.ini_type,
                default=_fresh(option.ini_default),
            )


def _argparse(option: Option) -> dict[str, Any]:
    """The entry's argparse settings, as ``addoption`` takes them."""
    attrs: dict[str, Any] = {"dest": option.name, "default": _fresh(option.cli_default)}
    if option.action != "store":
        attrs["action"] = option.action
    for key in ("metavar", "nargs", "const", "choices"):
        if getattr(option, key) is not None:
            attrs[key] = getattr(option, key)
    if option.argtype is not None:
        attrs["type"] = option.argtype
    return attrs


def foreign_mapped(config: pytest.Config, owner: str) -> bool:
    """Whether this plugin maps the options of ``owner`` (``benchmark``, ``codspeed``) in this
    session: that plugin is not active (not installed, blocked with ``-p no:NAME``, or switched
    off for the session), whoever declared its options."""
    return config.pluginmanager.get_plugin(owner) is None


def _fresh(default: object) -> object:
    """A list default copied: each session's parser gets its own (the table's is shared)."""
    return list(default) if isinstance(default, list) else default


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


#: Options that do not ask for a bench session: which plugin provides the ``benchmark``
#: fixture is a choice for plain test runs too (their hint still shows).
_NOT_ASKING: Final = frozenset({"bench_benchmark_fixture"})


def bench_option_given(config: pytest.Config) -> bool:
    """Whether any ``--bench*`` option is set, from wherever (the command line, ``addopts``,
    ``PYTEST_ADDOPTS``): every default is empty, ``None`` or ``False``. (pytest-benchmark's
    options are ``benchmark_*``, which this does not match.)"""
    return any(
        value
        for name, value in vars(config.option).items()
        if name.startswith("bench_") and name not in _NOT_ASKING
    )


def _implying_option(config: pytest.Config) -> str | None:
    """The first option of :data:`IMPLYING_OPTIONS` (or :data:`FOREIGN_IMPLYING`, where this
    plugin maps them) among the command-line arguments (pytest's parser takes no
    abbreviations, so the spelled-out forms are all there is)."""
    for raw in config.invocation_params.args:
        arg = str(raw)
        if arg == "--":
            break
        name = arg.partition("=")[0]
        if name in IMPLYING_OPTIONS:
            return name
        owner = FOREIGN_IMPLYING.get(name)
        if owner is not None and foreign_mapped(config, owner):
            return name
    return None


def _foreign_enable(config: pytest.Config) -> bool:
    """``--benchmark-enable`` or ``--codspeed`` (from anywhere), where this plugin maps them:
    ``--bench``."""
    option = config.option
    return bool(
        (getattr(option, "benchmark_enable", False) and foreign_mapped(config, "benchmark"))
        or (getattr(option, "codspeed", False) and foreign_mapped(config, "codspeed"))
    )


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
    command-line argument that names a bench file; ``--benchmark-enable`` and ``--codspeed``
    too (from anywhere), where this plugin maps pytest-benchmark's and pytest-codspeed's
    options."""
    return bool(
        config.getoption("bench")
        or config.getini("bench")
        or config.getoption("bench_check")
        or _implying_option(config)
        or _foreign_enable(config)
        or _names_bench_file(config, tuple(config.getini("bench_files")))
    )
