"""The rule of the tests that count instructions (``--bench-instructions``) under a real
valgrind: required when ``CI`` is set (``.ci/run`` installs Debian's valgrind), skipped with a
reason elsewhere when valgrind is not on PATH."""

from __future__ import annotations

import os
import shutil

import pytest


def need_valgrind() -> None:
    """Fail (``CI`` set) or skip (otherwise) the test when no valgrind is on PATH."""
    if shutil.which("valgrind") is not None:
        return
    if os.environ.get("CI"):
        pytest.fail(
            "CI is set but no valgrind is on PATH: the instruction-count tests are required in "
            "CI (.ci/run installs Debian's valgrind when it runs as root)",
            pytrace=False,
        )
    pytest.skip("no valgrind on PATH (apt-get install valgrind); required when CI is set")
