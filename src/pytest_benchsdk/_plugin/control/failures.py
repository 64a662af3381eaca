"""Failures of a session that are not an item's, counted where pytest counts failures.

A session can fail with every item passed: a regression with ``--bench-compare-fail``, run
warnings with ``--bench-warnings=error``, a broken store, an output file that could not be
written. The ``benchmarks`` section says so in red, but pytest's last line, the one people
read, would say ``40 passed`` in green. Each such failure becomes an error report in the
terminal reporter's counts: the last line reads ``40 passed, 1 error`` in red, the ERRORS
section and the short test summary name it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, cast

import pytest

__all__ = ["NODE_ID", "count_session_failures"]

#: What the reports are named after (the short summary's ``ERROR benchsdk - …``).
NODE_ID: Final = "benchsdk"


class _Failure:
    """A report's long representation: the failure's line (pytest prints ``toterminal`` in
    the ERRORS section and ``reprcrash.message`` in the short summary)."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.reprcrash = self

    def toterminal(self, tw: Any) -> None:
        tw.line(self.message, red=True, bold=True)

    def __str__(self) -> str:
        return self.message


def count_session_failures(config: pytest.Config, failures: Sequence[str]) -> None:
    """Add one error report per failure to the terminal reporter's counts (nothing without
    a terminal reporter, e.g. ``-p no:terminal``)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    for message in failures:
        report = pytest.TestReport(
            nodeid=NODE_ID,
            location=(NODE_ID, None, "the benchmarks (pytest-benchsdk)"),
            keywords={},
            outcome="failed",
            longrepr=cast(Any, _Failure(message)),
            when="teardown",
        )
        reporter.stats.setdefault("error", []).append(report)
