"""Upstream's ``parseCliArgs``: ``bench run``'s flags, with upstream's names and
messages, into :class:`CliArgs` (the run overrides the pytest options make too)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from pytest_benchsdk._config.validate import MAX_CONCURRENCY, MAX_ITERATIONS, MAX_STAGGER_DELAY_MS
from pytest_benchsdk._engine.flag_values import (
    parse_group_by,
    parse_non_negative_number,
    parse_positive_int,
    parse_slug,
    parse_text,
)
from pytest_benchsdk._engine.schedule import RunArgs, is_env_no_ingest

__all__ = ["USAGE", "CliArgs", "parse_cli_args", "split_platform_flags"]

#: ``pytest-benchsdk run``'s usage, upstream ``bench run``'s with our names (the message of a
#: command line that is not one).
USAGE = (
    "Usage:\n  pytest-benchsdk run <bench_file.py> [--shape name] [--provider a,b] [--run-key key]"
    ' [--worker-pool N]\n      [--benchmark slug] [--name "My benchmark"]\n'
    "      [--iterations N] [--concurrency N] [--stagger-delay-ms N]"
    " [--group-by participant|round]\n"
    "      [--close-after-ms N] [--no-ingest | --dry-run] [--check] [--base-url <url>]\n"
    "      [--api-key <key>] [--store PATH | --no-store]\n"
    "  pytest-benchsdk check <bench_file.py> [--base-url <url>] [--api-key <key>]"
)


@attrs.frozen
class CliArgs(RunArgs):
    """Upstream ``CliArgs`` (``benchmark``, ``name``, ``shape``, ``run_key``, ``iterations``,
    ``concurrency``, ``stagger_delay_ms``, ``group_by``, ``providers``, ``no_ingest``,
    ``worker_pool``, ``close_after_ms``), plus ``custom``: the values of the config's declared
    custom flags (``--region eu`` → ``{"region": "eu"}``; a flag without a value is ``""``)."""

    custom: Mapping[str, str] = attrs.field(factory=dict, kw_only=True)


_SLUG_FLAGS = ("--benchmark", "--slug")
_TEXT_FLAGS = {"--name": "name", "--shape": "shape", "--run-key": "run_key"}
_INT_FLAGS = {
    "--iterations": ("iterations", MAX_ITERATIONS),
    "--concurrency": ("concurrency", MAX_CONCURRENCY),
    "--worker-pool": ("worker_pool", None),
}
_NUMBER_FLAGS = {
    "--stagger-delay-ms": ("stagger_delay_ms", MAX_STAGGER_DELAY_MS),
    "--close-after-ms": ("close_after_ms", None),
}
_VALUE_FLAGS = {*_SLUG_FLAGS, *_TEXT_FLAGS, *_INT_FLAGS, *_NUMBER_FLAGS, "--group-by", "--provider"}


def parse_cli_args(
    argv: Sequence[str],
    allowed_custom_flags: Iterable[str] = (),
    *,
    env: Mapping[str, str] | None = None,
) -> CliArgs:
    """``bench run``'s flags as upstream parses them (``--flag value`` and ``--flag=value``; a
    value flag written without ``=`` takes the next token whatever it is). ``ValueError`` with
    upstream's message for a bad value, ``Unknown flag(s): a, b`` for the rest.
    ``BENCHSDK_NO_INGEST`` in ``env`` (default ``os.environ``) sets ``no_ingest``."""
    import os

    declared = {flag if flag.startswith("-") else f"--{flag}" for flag in allowed_custom_flags}
    fields: dict[str, Any] = {}
    providers: list[str] = []
    custom: dict[str, str] = {}
    unknown: list[str] = []
    seen: set[str] = set()
    tokens = list(argv)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        flag, eq, inline = token.partition("=")
        if flag in _VALUE_FLAGS:
            seen.add(flag)
            value, index = _flag_value(tokens, index, eq, inline)
            _set(fields, providers, flag, value)
        elif flag in ("--no-ingest", "--dry-run") and not eq:
            fields["no_ingest"] = True
        elif flag in declared:
            value = inline if eq else ""
            if not eq and index < len(tokens) and not tokens[index].startswith("-"):
                value = tokens[index]
                index += 1
            custom[flag.lstrip("-")] = value
        else:
            unknown.append(flag if flag.startswith("-") else token)
            if not eq and index < len(tokens) and not tokens[index].startswith("-"):
                index += 1
    if unknown:
        raise ValueError(f"Unknown flag(s): {', '.join(unknown)}")
    if "--provider" in seen:
        # Upstream: `--provider ''` selects nobody (`[]`), not everybody.
        fields["providers"] = tuple(providers)
    if fields.get("worker_pool") is not None and not fields.get("run_key"):
        raise ValueError("--worker-pool requires --run-key")
    if not fields.get("no_ingest") and is_env_no_ingest(os.environ if env is None else env):
        fields["no_ingest"] = True
    return CliArgs(**fields, custom=custom)


def _flag_value(tokens: Sequence[str], index: int, eq: str, inline: str) -> tuple[str, int]:
    """A value flag's value, as upstream reads it: after ``=``, else the next token (whatever
    it is), else empty; and the index of the token after it."""
    if eq:
        return inline, index
    if index < len(tokens):
        return tokens[index], index + 1
    return "", index


def _set(fields: dict[str, Any], providers: list[str], flag: str, value: str) -> None:
    if flag in _SLUG_FLAGS:
        fields["benchmark"] = parse_slug(flag, value)
    elif flag in _TEXT_FLAGS:
        fields[_TEXT_FLAGS[flag]] = parse_text(flag, value)
    elif flag in _INT_FLAGS:
        name, maximum = _INT_FLAGS[flag]
        fields[name] = parse_positive_int(flag, value, maximum)
    elif flag in _NUMBER_FLAGS:
        name, bound = _NUMBER_FLAGS[flag]
        fields[name] = parse_non_negative_number(flag, value, bound)
    elif flag == "--group-by":
        fields["group_by"] = parse_group_by(flag, value)
    else:  # --provider: a comma list, trimmed, empties dropped, repeatable
        providers.extend(part.strip() for part in value.split(",") if part.strip())


def split_platform_flags(argv: Sequence[str]) -> tuple[str | None, str | None, list[str]]:
    """``--base-url`` / ``--api-key`` (also ``=``) taken out of ``argv`` first, as upstream's
    ``bench run``: ``(base_url, api_key, the rest)``. A missing value, or one starting with
    ``--``, is a ``ValueError``."""
    found: dict[str, str] = {}
    rest: list[str] = []
    tokens = list(argv)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        flag, eq, inline = token.partition("=")
        if flag not in ("--base-url", "--api-key"):
            rest.append(token)
            continue
        value, index = _flag_value(tokens, index, eq, inline)
        if not value or value.startswith("--"):
            raise ValueError(USAGE)
        found[flag] = value
    return found.get("--base-url"), found.get("--api-key"), rest
