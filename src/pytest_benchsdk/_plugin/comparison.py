"""``--bench-compare`` and ``--bench-save``: the session's side of baselines.

What a REF names is found by :mod:`pytest_benchsdk.results` (one home for the store CLI and
the plugin): :func:`check_ref` resolves it when the session starts, before anything runs, so an
unknown id or name, an ambiguous prefix or an unreadable file is a usage error naming the
closest matches; :func:`baseline_of` gives each benchmark its baseline at the session end
(``latest``: the newest complete run with the same setup), with the between-run noise of its
history (the session keeps a complete run under ``--bench-save``'s name:
:func:`pytest_benchsdk._session.save_name`). The comparison itself is made with the run's other
analyses (:func:`pytest_benchsdk.results.analyse`).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_benchsdk._base.runenv import RunEnvironment
from pytest_benchsdk._session import SessionOptions
from pytest_benchsdk.results import (
    Baseline,
    BenchmarkRun,
    CompareRef,
    RunRefError,
    RunSetup,
    find_baseline,
    resolve_ref,
)
from pytest_benchsdk.store import ResultStore

__all__ = ["baseline_of", "check_ref", "current_setup"]


def check_ref(options: SessionOptions, store: ResultStore | None) -> CompareRef | None:
    """``--bench-compare``'s REF resolved, or a usage error saying why it names nothing."""
    if options.compare is None:
        return None
    try:
        return resolve_ref(store, options.compare, options.store_path)
    except RunRefError as exc:
        raise pytest.UsageError(f"--bench-compare={options.compare}: {exc}") from None


def run_setup(run: BenchmarkRun, options: SessionOptions) -> RunSetup:
    return RunSetup(run.config.benchmark_slug, run.schedule.resolved.to_wire(), options.dry_run)


def current_setup(
    run: BenchmarkRun, environment: RunEnvironment, options: SessionOptions
) -> dict[str, Any]:
    return {
        "benchmark": run.config.benchmark_slug,
        "knobs": run.schedule.resolved.to_wire(),
        "environment": environment.to_dict(),
        "dry_run": options.dry_run,
    }


def baseline_of(
    ref: CompareRef, run: BenchmarkRun, options: SessionOptions, store: ResultStore | None
) -> Baseline | str:
    """The run's baseline (or why there is none); ``store`` None without a results store."""
    return find_baseline(ref, store, run_setup(run, options), run.local_run_id)
