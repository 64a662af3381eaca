"""The scoring spec a benchmark config declares, and what is wrong with it.

:func:`scoring_spec_of` is the one place that turns a config's ``on_score`` or declarative
``scoring`` into a :class:`~pytest_benchsdk.scoring.ScoringSpec`: scoring a run, the threshold
items and ``--bench-check`` all use it. The config is read by its fields only (the analyses
import no config model).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol

from pytest_benchsdk._analysis.scoring import (
    ScoringSpec,
    ScoringSpecError,
    higher_is_better,
    lower_is_better,
    scoring_config_to_spec,
    validate_scoring_spec,
)
from pytest_benchsdk._base.awaitables import resolve_awaitable


class ScoredConfig(Protocol):
    """The fields of a benchmark config (:class:`~pytest_benchsdk.config.BenchmarkConfig`)
    that say how it is scored: the analyses read them without depending on the config area."""

    @property
    def on_score(self) -> Callable[..., Any] | None: ...
    @property
    def scoring(self) -> Any: ...
    @property
    def dimensions(self) -> Any: ...
    @property
    def display(self) -> Any: ...


__all__ = ["scoring_problem", "scoring_spec_of"]


def scoring_spec_of(config: ScoredConfig) -> ScoringSpec | None:
    """The config's scoring spec: ``on_score``'s, else the declarative ``scoring`` (with the
    display units), else None. Raises :class:`ScoringSpecError` for a bad ``on_score``."""
    if config.on_score is not None:
        _check_on_score_signature(config.on_score)
        spec = resolve_awaitable(config.on_score(lower_is_better, higher_is_better))
        if not isinstance(spec, ScoringSpec):
            raise ScoringSpecError(
                f"on_score must return a ScoringSpec (got {type(spec).__name__})"
            )
        return spec
    if config.scoring is not None:
        return scoring_config_to_spec(config.scoring, config.dimensions, config.display)
    return None


def _check_on_score_signature(on_score: Any) -> None:
    """``on_score`` is called as ``on_score(lower_is_better, higher_is_better)``: say so
    instead of a bare ``TypeError`` when it cannot take those two arguments."""
    try:
        signature = inspect.signature(on_score)
    except (TypeError, ValueError):
        return  # a builtin or C callable: let the call itself tell
    try:
        signature.bind(lower_is_better, higher_is_better)
    except TypeError as exc:
        raise ScoringSpecError(
            f"on_score is called as on_score(lower_is_better, higher_is_better) and must "
            f"return a ScoringSpec; {getattr(on_score, '__name__', 'it')}{signature} "
            f"cannot take those two arguments ({exc})"
        ) from None


def scoring_problem(config: ScoredConfig) -> str | None:
    """What is wrong with the config's scoring, if anything (upstream's check validates
    ``on_score``'s spec too)."""
    try:
        spec = scoring_spec_of(config)
        if spec is not None:
            validate_scoring_spec(spec)
    except Exception as exc:
        return str(exc)
    return None
