"""``--bench-instructions`` in the process's runtime: re-running the session under callgrind
before anything is collected, and counting in each of its processes.

:func:`relaunch_under_valgrind` runs in ``pytest_load_initial_conftests`` (the earliest hook
that has the parsed options and the ini, before a conftest is imported): a process not yet
under valgrind builds the helper, finds valgrind and replaces itself with the same command
under callgrind (:mod:`pytest_benchsdk._instruments.launch`); what is missing is a
:class:`pytest.UsageError` saying what to install. Every process of the session (the
controller, xdist's workers) then counts with :class:`InstructionsPlugin`, and the process
that started the session removes the dump folder when it ends.
"""

from __future__ import annotations

import os
import sys
from typing import Final

import pytest

from pytest_benchsdk import _instruments
from pytest_benchsdk._instruments import launch
from pytest_benchsdk._instruments.build import HelperBuildError, build_helper

__all__ = ["InstructionsPlugin", "relaunch_under_valgrind"]

_FLAG: Final = "--bench-instructions"


def relaunch_under_valgrind(config: pytest.Config) -> None:
    """Replace this process with the same pytest command under callgrind, unless it runs
    under it already, or this pytest session is not the process's own command (``pytest.main``
    inside another program, which cannot be re-run: :class:`InstructionsPlugin` says so when
    the session is configured). Raises :class:`pytest.UsageError` when valgrind or a C
    compiler is missing."""
    under_valgrind = bool(os.environ.get(launch.ENV_FOLDER))
    if not under_valgrind and list(config.invocation_params.args) != sys.argv[1:]:
        return
    try:
        helper = build_helper()
    except HelperBuildError as exc:
        raise pytest.UsageError(str(exc)) from None
    if launch.running_on_valgrind():
        if not under_valgrind:
            raise pytest.UsageError(
                f"{_FLAG}: this pytest runs under valgrind already, started by hand; run the "
                "pytest command alone: the plugin starts valgrind with the options the counts "
                "need"
            )
        return
    try:
        valgrind = launch.find_valgrind()
    except launch.ValgrindMissing as exc:
        raise pytest.UsageError(str(exc)) from None
    launch.remove_abandoned_folders()
    folder = launch.new_dump_folder()
    argv = launch.valgrind_command(valgrind, folder, launch.interpreter_argv())
    env = launch.relaunch_environment(os.environ, folder, helper, launch.valgrind_version(valgrind))
    # pytest captures the standard streams at the file descriptors by now: the new program
    # must get the real ones.
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        capture.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.write(
        "benchsdk: counting instructions: this session runs again under valgrind "
        f"(callgrind, PYTHONHASHSEED={env['PYTHONHASHSEED']})\n"
    )
    sys.stderr.flush()
    os.execve(valgrind, argv, env)


class InstructionsPlugin:
    """Counts this process's measured regions (plugin ``benchsdk-instructions``)."""

    def __init__(self, calls: int) -> None:
        counter = launch.counter_from_environment(calls)
        if counter is None:
            raise pytest.UsageError(
                f"{_FLAG}: this process does not run under callgrind as the plugin starts it: "
                "the pytest command re-runs itself under valgrind, so run pytest as a command "
                "(not pytest.main inside another program), without starting valgrind yourself"
            )
        _instruments.activate(counter)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self) -> None:
        _instruments.deactivate()
        launch.remove_dump_folder()
