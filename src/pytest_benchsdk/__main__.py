"""``python -m pytest_benchsdk``: the store CLI (:mod:`pytest_benchsdk.cli`), whose ``run``
command runs a bench file without pytest (:mod:`pytest_benchsdk.runner`)."""

from __future__ import annotations

import sys

from pytest_benchsdk.cli import main

if __name__ == "__main__":
    sys.exit(main())
