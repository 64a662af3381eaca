"""The bench session without pytest: the one engine-side home of a run's life.

Both paths drive it: the pytest glue (the controller plugin adapts pytest's hooks to it) and the
programmatic runs (:mod:`pytest_benchsdk.runner`: ``run_benchmark``, ``pytest-benchsdk run``).
Above ``results/``, ``store/``, ``platform/`` and the views; below the glue and the CLI.

* :mod:`._options`: :class:`SessionOptions`, the session's options as plain values;
* :mod:`._core`: :class:`BenchSession`, the runs from their opening to the summary;
* :mod:`._link`: the platform link (imported only outside dry runs);
* :mod:`._lines`: the run header and the summary section, rendered by ``_views.text``;
* :mod:`._secrets`: what is redacted, per bench file.
"""

from pytest_benchsdk._session._core import (
    BenchSession,
    Hook,
    SessionHooks,
    SessionUsageError,
    describe,
    unwritable_reason,
)
from pytest_benchsdk._session._lines import run_header_lines, section_lines
from pytest_benchsdk._session._options import (
    FAILED_ITERATIONS_MODES,
    SessionOptions,
    parse_failed_iterations,
)
from pytest_benchsdk._session._secrets import SessionSecrets

__all__ = [
    "FAILED_ITERATIONS_MODES",
    "BenchSession",
    "Hook",
    "SessionHooks",
    "SessionOptions",
    "SessionSecrets",
    "SessionUsageError",
    "describe",
    "parse_failed_iterations",
    "run_header_lines",
    "section_lines",
    "unwritable_reason",
]
