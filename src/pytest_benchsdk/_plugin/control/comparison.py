"""``--bench-compare``: pytest's side of baselines, a REF that names nothing as a usage error.

Baselines have one home, :mod:`pytest_benchsdk.results` (what a REF names, a run's baseline
with its history, the one rule for ``--bench-save``); the comparison is made with the run's
other analyses (:func:`pytest_benchsdk.results.analyse`). :func:`check_ref` resolves the REF
when the session starts, before anything runs, so an unknown id or name, an ambiguous prefix or
an unreadable file stops the session with pytest's usage error naming the closest matches.
"""

from __future__ import annotations

import pytest

from pytest_benchsdk._session import SessionOptions
from pytest_benchsdk.results import CompareRef, RunRefError, find_run, resolve_ref, start_history
from pytest_benchsdk.store import ResultStore

__all__ = ["check_ref", "start_history_from"]


def check_ref(options: SessionOptions, store: ResultStore | None) -> CompareRef | None:
    """``--bench-compare``'s REF resolved, or a usage error saying why it names nothing."""
    if options.compare is None:
        return None
    try:
        return resolve_ref(store, options.compare, options.store_path)
    except RunRefError as exc:
        raise pytest.UsageError(f"--bench-compare={options.compare}: {exc}") from None


def start_history_from(options: SessionOptions, store: ResultStore | None) -> str | None:
    """``--bench-history-from=RUN``: RUN's benchmark's history starts afresh with RUN (marked
    in the store before anything runs; ``now`` is marked as each run begins), the line that
    says so; a RUN that names nothing is a usage error."""
    ref = options.history_from
    if ref is None or ref == "now":
        return None
    if store is None:
        raise pytest.UsageError(
            f"--bench-history-from={ref}: no results store at {options.store_path} to find "
            "the run in ('now' starts the history with this session's run)"
        )
    try:
        run = find_run(store, ref)
    except RunRefError as exc:
        raise pytest.UsageError(
            f"--bench-history-from={ref}: {exc} ('now' starts the history with this session's run)"
        ) from None
    return start_history(store, run.benchmark_slug, run.run_id)
