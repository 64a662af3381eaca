"""pytest-benchmark's and pytest-codspeed's options, as those plugins parse them.

The option table (:mod:`.table`) declares their options with the same flags, ``dest`` names,
defaults and value types as pytest-benchmark 5.1 and pytest-codspeed 5 (so that whichever
plugin declared an option, ``config.getoption(dest)`` reads the same value), and only where
the plugin that owns it is not going to declare it itself (:func:`owner_active`): argparse
refuses an option string declared twice. The value parsers here are pytest-benchmark's
(``pytest_benchmark/utils.py``), re-made with the standard library: each raises
:class:`argparse.ArgumentTypeError`, which pytest shows as a usage error naming the flag.

pytest imports this module in every session: it holds the parsers and the check only.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import platform
import re
from typing import Any, Final

import pytest

from pytest_benchsdk._base.defaults import BENCHMARK_COLUMNS

__all__ = [
    "BENCHMARK",
    "CODSPEED",
    "DEFAULT_COLUMNS",
    "SORT_KEYS",
    "owner_active",
    "parse_columns",
    "parse_compare_fail",
    "parse_cprofile_loops",
    "parse_name_format",
    "parse_rounds",
    "parse_save",
    "parse_seconds",
    "parse_sort",
    "parse_timer",
    "parse_warmup",
]

#: pytest-benchmark's plugin name (its ``pytest11`` entry point) and package.
BENCHMARK: Final = "benchmark"
#: pytest-codspeed's.
CODSPEED: Final = "codspeed"
_DISTRIBUTIONS: Final = {BENCHMARK: "pytest-benchmark", CODSPEED: "pytest-codspeed"}

#: pytest-benchmark's columns (``ALLOWED_COLUMNS``) and its default ``--benchmark-columns``.
ALLOWED_COLUMNS: Final = BENCHMARK_COLUMNS
DEFAULT_COLUMNS: Final = (
    "min",
    "max",
    "mean",
    "stddev",
    "median",
    "iqr",
    "outliers",
    "ops",
    "rounds",
    "iterations",
)
#: ``--benchmark-sort``'s values.
SORT_KEYS: Final = ("min", "max", "mean", "stddev", "name", "fullname")
NAME_FORMATS: Final = ("short", "normal", "long", "trial")


def _installed(owner: str) -> bool:
    """Whether the distribution of ``owner`` is installed with its ``pytest11`` entry point
    (one distribution looked up, not every entry point of the environment)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import distribution as find

    try:
        found = find(_DISTRIBUTIONS[owner])
    except PackageNotFoundError:
        return False
    return any(ep.group == "pytest11" and ep.name == owner for ep in found.entry_points)


_INSTALLED: dict[str, bool] = {}


def owner_active(pluginmanager: pytest.PytestPluginManager, owner: str) -> bool:
    """Whether the plugin ``owner`` (``benchmark``, ``codspeed``) is, or is going to be, active
    in this session, declaring its own options: registered already, or installed (its
    ``pytest11`` entry point) and neither blocked (``-p no:NAME``) nor left unloaded
    (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``, where only ``-p NAME`` loads it, and then it is
    registered before this plugin's options are added)."""
    if pluginmanager.get_plugin(owner) is not None:
        return True
    if pluginmanager.is_blocked(owner) or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    if owner not in _INSTALLED:
        _INSTALLED[owner] = _installed(owner)
    return _INSTALLED[owner]


def distribution(owner: str) -> str:
    return _DISTRIBUTIONS[owner]


# -- pytest-benchmark's parsers (pytest_benchmark/utils.py) ---------------------------------


def parse_seconds(string: str) -> str:
    """A number of seconds, kept as its text (pytest-benchmark's ``SecondsDecimal`` text)."""
    text = str(string).strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(
            f"Invalid decimal value {string!r}: expected a number of seconds >= 0, e.g. 0.5"
        )
    return text


def parse_rounds(string: str) -> int:
    try:
        value = int(string)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 (got {string!r})") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {string!r})")
    return value


def _load_timer(string: str) -> Any:
    if "." not in string:
        raise argparse.ArgumentTypeError(
            f"must be in dotted form, e.g. 'time.perf_counter' (got {string!r})"
        )
    module, attr = string.rsplit(".", 1)
    if module == "pep418":
        module = "time"
    try:
        timer = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot load timer {string!r}: {exc}") from None
    if not callable(timer):
        raise argparse.ArgumentTypeError(f"{string!r} is not a function")
    return timer


def parse_timer(string: str) -> str:
    """A timer function by its dotted name (``time.perf_counter``), loaded to check it."""
    timer = _load_timer(str(string).strip())
    module = getattr(timer, "__module__", None)
    name = getattr(timer, "__name__", repr(timer))
    return f"{module}.{name}" if module else name


def load_timer(string: str) -> Any:
    """The timer function a (checked) dotted name names."""
    return _load_timer(string)


def parse_warmup(string: str) -> bool:
    text = str(string).lower().strip()
    if text == "auto":
        return platform.python_implementation() == "PyPy"
    if text in ("off", "false", "no"):
        return False
    if text in ("on", "true", "yes", ""):
        return True
    raise argparse.ArgumentTypeError(f"expected auto, on or off (got {string!r})")


def parse_sort(string: str) -> str:
    text = str(string).lower().strip()
    if text not in SORT_KEYS:
        raise argparse.ArgumentTypeError(
            f"Unacceptable value: {text!r}. Value for --benchmark-sort must be one of: "
            + ", ".join(repr(k) for k in SORT_KEYS)
        )
    return text


def parse_columns(string: str) -> list[str]:
    columns = [s.strip() for s in str(string).lower().split(",")]
    invalid = [c for c in columns if c not in ALLOWED_COLUMNS]
    if invalid:
        raise argparse.ArgumentTypeError(
            f"Invalid column name(s): {', '.join(invalid)}. The only valid column names are: "
            + ", ".join(ALLOWED_COLUMNS)
        )
    return columns


def parse_name_format(string: str) -> str:
    text = str(string).lower().strip()
    if text not in NAME_FORMATS:
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(NAME_FORMATS)} (got {string!r})"
        )
    return text


def parse_save(string: str) -> str:
    if not string:
        raise argparse.ArgumentTypeError("Can't be empty.")
    illegal = "".join(c for c in "\\/:*?<>|" if c in string)
    if illegal:
        raise argparse.ArgumentTypeError(
            f"Must not contain any of these characters: /:*?<>|\\ (it has {illegal!r})"
        )
    return string


_COMPARE_FAIL: Final = re.compile(
    r"^(?P<field>min|max|mean|median|stddev|iqr):"
    r"((?P<percentage>[0-9]?[0-9])%|(?P<difference>[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?))$"
)


def parse_compare_fail(string: str) -> str:
    """pytest-benchmark's ``FIELD:N%`` or ``FIELD:SECONDS``, kept as its text (pytest-benchmark
    keeps a check object; the settings read either)."""
    if not _COMPARE_FAIL.match(string):
        raise argparse.ArgumentTypeError(
            f"Could not parse value: {string!r} (expected FIELD:N% or FIELD:SECONDS, FIELD one "
            "of min, max, mean, median, stddev, iqr; e.g. min:5%)"
        )
    return string


def parse_cprofile_loops(string: str) -> int | None:
    if string == "auto":
        return None
    try:
        value = int(string)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"Could not parse value: {string!r}. Expected an integer or `auto`."
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"Invalid value: {string!r}. Must be greater than 0.")
    return value


def parse_int(string: str) -> int:
    """argparse's ``int``, with a message that says what is expected."""
    try:
        return int(string)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer (got {string!r})") from None


def parse_float(string: str) -> float:
    try:
        return float(string)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number (got {string!r})") from None
