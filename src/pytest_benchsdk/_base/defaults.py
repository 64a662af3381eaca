"""Every default that more than one part of the package states, defined once.

A leaf: the option table (``_plugin/options/table.py``, which refers to these for the options'
defaults and must stay cheap to import), the session, the CLI and the analyses all read these.
Where an option's default is stated, the table is the place; a constant lives here when the
engine (which imports no pytest) states it too.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BENCHMARK_COLUMNS",
    "DEFAULT_AB_MODE",
    "DEFAULT_AB_PROCESSES",
    "DEFAULT_COUNT_THRESHOLD",
    "DEFAULT_FAILED_ITERATIONS",
    "DEFAULT_INSTRUCTION_CALLS",
    "DEFAULT_NOISE_THRESHOLD",
    "DEFAULT_RESAMPLES",
    "DEFAULT_RESUBMIT_TIMEOUT_S",
    "DEFAULT_SCORE_RESAMPLES",
    "DEFAULT_STORE",
    "DEFAULT_UPLOAD_TIMEOUT_S",
    "DEFAULT_WARNINGS",
]

#: The results store, relative to the rootdir (pytest) or the current directory (the CLI).
DEFAULT_STORE: Final = ".benchmarks/benchsdk.sqlite3"
#: Bootstrap resamples of a statistic's comparison interval (``compare_samples``).
DEFAULT_RESAMPLES: Final = 2000
#: Bootstrap resamples of the score intervals (``score_uncertainty``, ``--bench-score-resamples``).
DEFAULT_SCORE_RESAMPLES: Final = 200
#: A relative change smaller than this is no change (``--bench-compare-noise``: 2 %).
DEFAULT_NOISE_THRESHOLD: Final = 0.02
#: A count (``instructions``) that changed by less than this did not change
#: (``--bench-compare-count-noise``: 0.5 %; a count's history marks a change point from this
#: size on, where a time's needs :data:`DEFAULT_NOISE_THRESHOLD`). A count does not move with
#: load; this is room for what still moves it from session to session (the heap's history: see
#: the performance page).
DEFAULT_COUNT_THRESHOLD: Final = 0.005
#: How long the session end waits for platform deliveries (seconds, ``--bench-upload-timeout``).
DEFAULT_UPLOAD_TIMEOUT_S: Final = 30.0
#: How long ``--bench-resubmit`` may deliver (seconds, ``--bench-resubmit-timeout``).
DEFAULT_RESUBMIT_TIMEOUT_S: Final = 300.0
#: Run-hygiene warnings: ``warn`` (show them), ``error`` or ``off`` (``--bench-warnings``).
DEFAULT_WARNINGS: Final = "warn"
#: A failed iteration fails its run (``--bench-failed-iterations``: ``fail`` or ``record``).
DEFAULT_FAILED_ITERATIONS: Final = "fail"
#: An A/B round's two sides one after the other (``--bench-ab-mode``: or ``duet``).
DEFAULT_AB_MODE: Final = "interleaved"
#: Processes per A/B side, taking turns round by round (``--bench-ab-processes``).
DEFAULT_AB_PROCESSES: Final = 4
#: Counted calls of a calibrated step or a benchmarked test after its one warm call, where
#: ``--bench-instructions`` counts (``--bench-instructions-calls``): enough that one region's
#: fixed costs (and the interpreter's occasional re-specialisation, a few hundred
#: instructions) are spread thin, few enough that a millisecond's function costs about a
#: second under valgrind.
DEFAULT_INSTRUCTION_CALLS: Final = 10

#: pytest-benchmark's table columns (its ``ALLOWED_COLUMNS``), as ``--bench-columns`` and
#: ``--benchmark-columns`` name them.
BENCHMARK_COLUMNS: Final = (
    "min",
    "max",
    "mean",
    "stddev",
    "median",
    "iqr",
    "ops",
    "outliers",
    "rounds",
    "iterations",
)
