"""Every default that more than one part of the package states, defined once.

A leaf: the option definitions (which must stay cheap to import), the session, the CLI and the
analyses all read these.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_NOISE_THRESHOLD",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SCORE_RESAMPLES",
    "DEFAULT_STORE",
    "DEFAULT_UPLOAD_TIMEOUT_S",
]

#: The results store, relative to the rootdir (pytest) or the current directory (the CLI).
DEFAULT_STORE: Final = ".benchmarks/benchsdk.sqlite3"
#: Bootstrap resamples of a statistic's comparison interval (``compare_samples``).
DEFAULT_RESAMPLES: Final = 2000
#: Bootstrap resamples of the score intervals (``score_uncertainty``, ``--bench-score-resamples``).
DEFAULT_SCORE_RESAMPLES: Final = 200
#: A relative change smaller than this is no change (``--bench-compare-noise``: 2 %).
DEFAULT_NOISE_THRESHOLD: Final = 0.02
#: How long the session end waits for platform deliveries (seconds, ``--bench-upload-timeout``).
DEFAULT_UPLOAD_TIMEOUT_S: Final = 30.0
