"""Upstream's two-stage argv parsing of the platform commands (``@benchsdk/cli``'s
``parseGlobalArgs`` and ``parseSubcommandOptions``), with its messages.

Why not argparse: upstream takes global options anywhere on the line and leaves every other
``--option`` in place for the subcommand, which then rejects the ones it does not know with
``Unknown option: --x``; a value-taking option consumes the next token whatever it looks like;
booleans accept ``--json=true``; numbers follow JavaScript's ``Number()`` (``0x10``, ``1e2``,
``""`` is 0). argparse would reorder, abbreviate (``--lim``), reject ``--run --json`` and word
its errors differently, so users and scripts that know upstream would see other behaviour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from pytest_benchsdk._base.js import js_to_number

__all__ = ["GlobalArgs", "parse_global_args", "parse_subcommand_options"]

_STRING_GLOBALS = ("base-url", "api-key", "org", "format")
_BOOLEAN_GLOBALS = ("json", "verbose", "version", "help")
#: The subcommand options and their types (upstream's schema, with ``--max-lines`` of ``logs``).
SUBCOMMAND_OPTIONS = {
    "limit": "number",
    "offset": "number",
    "run": "string",
    "participant": "string",
    "steps": "string",
    "worker": "string",
    "out": "string",
    "max-lines": "number",
}


class UsageError(Exception):
    """A command line upstream would refuse (printed as is, exit status 1)."""


@attrs.define
class GlobalArgs:
    """The global options found anywhere on the line, and everything else in order."""

    values: dict[str, str | bool] = attrs.Factory(dict)
    positionals: list[str] = attrs.Factory(list)

    def text(self, key: str) -> str | None:
        value = self.values.get(key)
        return value if isinstance(value, str) else None

    def flag(self, key: str) -> bool:
        return self.values.get(key) is True


def _split(arg: str) -> tuple[str, str | None]:
    name, eq, value = arg.partition("=")
    return name[2:], (value if eq else None)


def parse_global_args(argv: Sequence[str]) -> GlobalArgs:
    """Global options anywhere; unknown ``--options`` stay with the positionals."""
    parsed = GlobalArgs()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            parsed.positionals.append(arg)
            i += 1
            continue
        key, value = _split(arg)
        if key in _STRING_GLOBALS:
            raw = value if value is not None else (argv[i + 1] if i + 1 < len(argv) else None)
            if raw is None:
                raise UsageError(f"Option --{key} requires a value")
            parsed.values[key] = raw
            i += 1 if value is not None else 2
        elif key in _BOOLEAN_GLOBALS:
            parsed.values[key] = True if value is None else value in ("true", "1")
            i += 1
        else:
            parsed.positionals.append(arg)
            i += 1
    return parsed


def _number(text: str) -> int | float:
    number = js_to_number(text)
    if not math.isfinite(number):
        raise ValueError
    # Integral numbers are written without a fraction, as JavaScript writes them in a query.
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def parse_subcommand_options(
    args: Sequence[str],
) -> tuple[dict[str, str | int | float], list[str]]:
    """The subcommand's options (``Unknown option: <arg>``, ``Option --<k> requires a value``,
    ``Option --<k> must be a number``) and its positionals."""
    options: dict[str, str | int | float] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            positionals.append(arg)
            i += 1
            continue
        key, value = _split(arg)
        kind = SUBCOMMAND_OPTIONS.get(key)
        if kind is None:
            raise UsageError(f"Unknown option: {arg}")
        if value is not None:
            raw = value
            i += 1
        elif i + 1 < len(args):
            raw = args[i + 1]
            i += 2
        else:
            raise UsageError(f"Option --{key} requires a value")
        if kind == "number":
            try:
                options[key] = _number(raw)
            except ValueError:
                raise UsageError(f"Option --{key} must be a number") from None
        else:
            options[key] = raw
    return options, positionals
