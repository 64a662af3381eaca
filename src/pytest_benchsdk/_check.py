"""``--bench-check``: validate every collected bench file without running an iteration."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ._session import BenchSession, _resolve
from .config import BenchmarkConfig
from .scoring import (
    ScoringSpec,
    higher_is_better,
    lower_is_better,
    scoring_config_to_spec,
    validate_scoring_spec,
)

__all__ = ["CHECK_FAILED", "check_scoring", "run_check"]

CHECK_FAILED = "Benchmark check failed. See warnings above for details."

#: ``(state) -> (api_ok, env_ok, warnings)``; the platform layer replaces the default.
PlatformProbe = Callable[[BenchSession], "tuple[bool, bool, list[str]]"]


def check_scoring(config: BenchmarkConfig) -> str | None:
    """The scoring problem of a config, if any (upstream validates ``on_score``'s spec too)."""
    try:
        if config.on_score is not None:
            spec = _resolve(config.on_score(lower_is_better, higher_is_better))
            if not isinstance(spec, ScoringSpec):
                return f"on_score must return a ScoringSpec (got {type(spec).__name__})"
            validate_scoring_spec(spec)
        elif config.scoring is not None:
            validate_scoring_spec(scoring_config_to_spec(config.scoring, config.dimensions))
    except Exception as exc:
        return str(exc)
    return None


def _platform_probe(state: BenchSession) -> tuple[bool, bool, list[str]]:
    if state.options.dry_run:
        return True, True, []
    from ._reporting import check_platform  # imports httpx: only when the check needs it

    return check_platform(state)


def run_check(
    state: BenchSession, session: pytest.Session, probe: PlatformProbe | None = None
) -> bool:
    """Print upstream's check report for each bench file; True when everything is fine."""
    reporter = state.config.pluginmanager.get_plugin("terminalreporter")

    def write(line: str) -> None:
        if reporter is not None:
            reporter.write_line(line)

    api_ok, env_ok, warnings = (probe or _platform_probe)(state)
    ok = api_ok and env_ok
    for warning in warnings:
        write(warning)
    for file_key, (bench_file, plan) in state.bench_files.items():
        report: dict[str, Any] = {
            "file": file_key,
            "benchmarkSlug": plan.config.benchmark_slug,
            "apiOk": api_ok,
            "envOk": env_ok,
            "participants": {
                "requested": list(plan.requested),
                "available": list(plan.participant_names),
                "skipped": [s.to_wire() for s in plan.skipped],
            },
        }
        if not plan.participants:
            ok = False
        config = bench_file.config
        if config.on_score is not None or config.scoring is not None:
            problem = check_scoring(config)
            report["scoringOk"] = problem is None
            if problem is not None:
                write(f"[benchsdk] Scoring validation failed: {problem}")
                ok = False
        write(json.dumps(report, indent=2, ensure_ascii=False))
    if not state.bench_files:
        write(
            "[benchsdk] no bench files collected (pattern: "
            f"{', '.join(state.options.file_patterns)})"
        )
        ok = False
    if not ok:
        write(CHECK_FAILED)
    return ok
