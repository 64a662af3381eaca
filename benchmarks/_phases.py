"""A pytest plugin for ``ab_verdicts.py --wall`` (loaded with ``-p _phases``): notes when each
part of a session begins, in seconds since the script started the session (``AB_T0``), and
appends them as a JSON line to ``AB_PHASES_OUT`` when the process exits."""

from __future__ import annotations

import atexit
import json
import os
import time
from collections.abc import Iterator

import pytest

T0 = float(os.environ["AB_T0"])
marks: dict[str, float] = {"plugins loaded": time.time() - T0}


def note(name: str) -> None:
    marks.setdefault(name, time.time() - T0)


@pytest.hookimpl(wrapper=True)
def pytest_sessionstart(session: pytest.Session) -> Iterator[None]:
    note("session start")
    yield
    note("session started")  # an A/B session: the revision checked out


@pytest.hookimpl(wrapper=True)
def pytest_collection_finish(session: pytest.Session) -> Iterator[None]:
    note("collected")
    yield
    note("ready")  # an A/B session: every side process imported its bench files


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    note("first item")


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    note("items done")
    yield
    note("runs finished")


@atexit.register
def _write() -> None:
    note("exit")
    with open(os.environ["AB_PHASES_OUT"], "a") as out:
        out.write(json.dumps(marks) + "\n")
