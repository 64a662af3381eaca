"""The first steps of every A/B side process, whatever it runs there.

:class:`~pytest_benchsdk._ab.side_processes.Side` starts a Python process through execnet and sends
this module's source to it (``gateway.remote_exec(module)``), as pytest-xdist's ``remote.py``
is sent to a worker; it runs there as ``__channelexec__``, so it imports nothing of the package
until the harness is on the import path:

1. ``{"harness": …, "program": module name}``, as soon as the process starts: Ctrl-C is left
   to the controller (it reaches the whole process group in a terminal; the controller ends
   this process when the session ends), the harness (the folder holding the measuring
   ``pytest_benchsdk``, the same on both sides) goes first on ``sys.path``, and the program is
   imported: the bench files' sides (:mod:`pytest_benchsdk._ab.side_program`) or the benchmarked
   tests' (:mod:`pytest_benchsdk._plugin.ab.side_session`). Its own imports (the measuring
   engine, most of a side's start) come before the side's paths, as in the controller, where
   pytest loads the plugin before a ``pythonpath`` ini puts the project's folders first;
2. the program's setup (``{"cwd": …, "paths": […], …}``), once the session collected what the
   sides run: move to ``cwd``, put this side's ``paths`` (its source tree, its files' folders)
   right after the harness, and hand the channel and the setup to the program's
   ``serve(channel, setup)``; or ``None``: stop.
"""

from __future__ import annotations

from typing import Any


def start(channel: Any) -> None:
    import importlib
    import os
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    first = channel.receive()
    sys.path.insert(0, first["harness"])
    program = importlib.import_module(first["program"])
    setup = channel.receive()
    if setup is None:
        return
    os.chdir(setup["cwd"])
    sys.path[1:1] = setup["paths"]
    program.serve(channel, setup)


if __name__ == "__channelexec__":
    start(channel)  # type: ignore[name-defined]  # noqa: F821  (execnet's global)
