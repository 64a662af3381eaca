"""The benchmark config: models, validation entry points and the ``define_*`` authoring helpers.

This is upstream ``@benchsdk/runner``'s ``BenchmarkConfig`` in Python: every field in snake_case,
``define_benchmark_config`` validating at import time of the bench file and returning a frozen,
normalized :class:`BenchmarkConfig`. Validation itself lives in ``_config_validate`` and works on
the raw input, so a value of any type becomes a :class:`ConfigIssue`, never an exception.

Declarative ``scoring`` and ``display`` accept models or dicts (snake_case or upstream camelCase
keys); their ``to_wire()`` gives upstream's camelCase JSON, which is what the platform stores.
"""

from __future__ import annotations

from pytest_benchsdk._base.public import publish
from pytest_benchsdk._config.models import (
    BenchmarkConfig,
    BenchmarkConfigError,
    ConfigIssue,
    DisplayConfig,
    DisplayMetric,
    DisplayOverview,
    DisplayStep,
    Participant,
    Phase,
    ScoringConfig,
    ScoringMetric,
    ScoringSuccess,
    Shape,
    Weights,
    define_benchmark_config,
    define_on_complete,
    define_task,
    validate_benchmark_config,
    validate_scoring_config,
)

__all__ = [
    "BenchmarkConfig",
    "BenchmarkConfigError",
    "ConfigIssue",
    "DisplayConfig",
    "DisplayMetric",
    "DisplayOverview",
    "DisplayStep",
    "Participant",
    "Phase",
    "ScoringConfig",
    "ScoringMetric",
    "ScoringSuccess",
    "Shape",
    "Weights",
    "define_benchmark_config",
    "define_on_complete",
    "define_task",
    "validate_benchmark_config",
    "validate_scoring_config",
]

publish(__name__, globals())
