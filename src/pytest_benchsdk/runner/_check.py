"""``pytest-benchsdk check <bench_file.py> [--base-url u] [--api-key k] [runner flags]`` and
``run <file> --check`` / ``--validate``: upstream ``bench check`` (reference §7.3) for a Python
bench file. Validate the file without running an iteration: its exports and config, the flags,
the shape, the platform (one listed benchmark, unless a dry run), the participants and the
scoring; print upstream's JSON report; fail with ``Benchmark check failed. See warnings above
for details.``"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_benchsdk._analysis.scoring_spec import scoring_problem
from pytest_benchsdk._engine.benchfile import load_bench_file
from pytest_benchsdk._engine.schedule import (
    apply_shape,
    filter_participants_by_env,
    select_participants,
)
from pytest_benchsdk.runner._argv import parse_cli_args, split_platform_flags

__all__ = ["CHECK_FAILED", "CHECK_FLAGS", "CheckFailedError", "run_check"]

CHECK_FAILED = "Benchmark check failed. See warnings above for details."
#: ``run``'s flags that make it a check, as upstream's ``bench run --check``.
CHECK_FLAGS = ("--check", "--validate")


class CheckFailedError(Exception):
    """The check found a problem (the warnings said which); upstream's ``Error``."""


def run_check(
    file: str, module: object, flags: Sequence[str], env: Mapping[str, str] | None = None
) -> None:
    """Check the bench file ``file`` (imported as ``module``) with the flags after it: the
    report on stdout, upstream's warnings on stderr; :class:`CheckFailedError` when the check
    fails, the file's or the flags' own error (``ValueError``, ``BenchSetupError`` …) when it
    cannot run."""
    environ = os.environ if env is None else env
    config = load_bench_file(Path(file), module).config
    base_url, api_key, flags = split_platform_flags(flags)
    parsed = parse_cli_args(flags, config.custom_cli_flags or (), env=environ)
    apply_shape(config, parsed, shape_flag="--shape")
    dry_run = parsed.no_ingest
    api_ok, env_ok = True, True
    if not dry_run:
        from pytest_benchsdk.platform import check_connectivity  # httpx: only when needed

        result = check_connectivity(dry_run=False, base_url=base_url, api_key=api_key, env=environ)
        api_ok, env_ok = result.api_ok, result.env_ok
        for warning in result.warnings:
            print(warning, file=sys.stderr, flush=True)
    names = parsed.providers if parsed.providers is not None else config.default_providers
    try:
        selected = select_participants(config.participants, names)
    except ValueError as exc:
        raise ValueError(f"Participant selection failed: {exc}") from None
    available, skipped = filter_participants_by_env(selected, environ)
    report: dict[str, Any] = {
        "file": file,
        "benchmarkSlug": config.benchmark_slug,
        "apiOk": api_ok,
        "envOk": env_ok,
        "participants": {
            "requested": [p.name for p in selected],
            "available": [p.name for p in available],
            "skipped": [s.to_wire() for s in skipped],
        },
    }
    scoring_ok = True
    if config.on_score is not None or config.scoring is not None:
        problem = scoring_problem(config)
        scoring_ok = problem is None
        if problem is not None:
            print(f"[benchsdk] Scoring validation failed: {problem}", file=sys.stderr, flush=True)
        report["scoringOk"] = scoring_ok
    print(json.dumps(report, indent=2, ensure_ascii=False), flush=True)
    if not api_ok or not available or not scoring_ok or not env_ok:
        raise CheckFailedError(CHECK_FAILED)
