"""One side of an A/B session's bench files, in its own process: runs single iterations when
asked.

:class:`~pytest_benchsdk._ab.side_processes.Side` starts the process (:mod:`.side_start` puts
the harness first on its import path and imports this module, and with it the measuring engine,
while the session goes on), then hands :func:`serve` the setup and the channel, over which it
speaks:

1. the setup, ``{"cwd": …, "paths": […], "files": {file key: path}, "foreign": root | None,
   "instructions": calls | None}`` (the process already moved to ``cwd`` with this side's
   ``paths`` right after the harness): count instructions when ``instructions`` says so
   (``--bench-instructions``: the process runs under callgrind, traced from the session's),
   import the bench files, and answer ``{"foreign": [modules imported from the other side's
   tree]}`` or ``{"error": text}``;
2. ``{"run": [file key, participant, phase, task index, custom args]}``: run that iteration
   now, on this process's own executor, and answer ``{"payload": RecordPayload JSON,
   "error": text | None, "output": what it wrote}`` (its stdout, stderr and log records, caught
   by :class:`~pytest_benchsdk._ab.side_output.SideCapture` with the secrets redacted: the
   controller replays them into the item's capture);
3. ``None`` (instead of 2): stop.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from pytest_benchsdk._ab.side_output import SideCapture
from pytest_benchsdk._base.redact import (
    LogRedaction,
    Redactor,
    credential_secrets,
    participant_secrets,
)
from pytest_benchsdk._engine.benchfile import BenchSetupError, load_bench_file
from pytest_benchsdk._engine.executor import Executor, GroupPlan, IterationSpec
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.plans import context_call
from pytest_benchsdk._engine.taskerror import is_task_error


def _load(file_key: str, path: str) -> Any:
    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return load_bench_file(Path(path), module)


def imported_from(root: str, bench_files: list[str]) -> list[str]:
    """The modules imported from ``root`` (the other side's tree), but the bench files (a
    bench file the revision lacks is the working tree's, on purpose) and the environment's
    (a virtualenv in the repository)."""
    base = Path(root).resolve()
    allowed = {Path(path).resolve() for path in bench_files}
    # The environment's own packages (pytest, this harness) are both sides': a virtualenv
    # inside the repository (./.venv) is not the other side's code.
    environment = {Path(p).resolve() for p in (sys.prefix, sys.exec_prefix)}
    found = []
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if not where:
            continue
        path = Path(where).resolve()
        if path in allowed or not path.is_relative_to(base):
            continue
        if any(path.is_relative_to(env) for env in environment):
            continue
        found.append(f"{name} ({where})")
    return sorted(found)


def count_here(setup: dict[str, Any]) -> str | None:
    """With ``--bench-instructions`` (the setup's ``instructions``: the counted calls of a
    loop), count this side process's measured regions: it runs under callgrind, traced from the
    session's process, with the environment the launch set. None when it counts (or nothing is
    counted), else why it cannot."""
    calls = setup.get("instructions")
    if not calls:
        return None
    from pytest_benchsdk import _instruments
    from pytest_benchsdk._instruments.launch import counter_from_environment

    counter = counter_from_environment(int(calls))
    if counter is None:
        return (
            "--bench-instructions: this side's process does not run under callgrind as the "
            "session started it (valgrind traces the session's children: is its interpreter a "
            "program valgrind skips?)"
        )
    _instruments.activate(counter)
    return None


def _error_text(error: BaseException) -> str:
    """A TaskError's message (the task's own verdict), else the traceback."""
    if is_task_error(error):
        return str(error)
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def serve(channel: Any, setup: dict[str, Any]) -> None:
    """Import the setup's bench files, then run iterations until ``None`` (the module's
    steps)."""
    files: dict[str, Any] = {}
    calls: dict[str, Any] = {}
    why_not = count_here(setup)
    if why_not is not None:
        channel.send({"error": why_not})
        return
    try:
        for key, path in setup["files"].items():
            files[key] = _load(key, path)
            calls[key] = context_call(files[key].task, path)
    except BaseException as exc:  # reported to the controller, which stops the session
        if isinstance(exc, BenchSetupError):  # its message says it all
            channel.send({"error": str(exc)})
        else:
            channel.send({"error": _error_text(exc)})
        return
    foreign = (
        imported_from(setup["foreign"], list(setup["files"].values()))
        if setup.get("foreign")
        else []
    )
    channel.send({"foreign": foreign})
    # What the iterations write (stdout, stderr, log records) goes back with each answer, to
    # the item's capture in the controller, every secret the side knows redacted on the way.
    redactor = Redactor(
        [
            *credential_secrets(os.environ),
            *participant_secrets(
                (p for f in files.values() for p in f.config.participants), os.environ
            ),
        ]
    )
    capture = SideCapture(redactor)
    redaction = LogRedaction(lambda: redactor)
    redaction.install()
    executor = Executor()
    try:
        while True:
            message = channel.receive()
            if message is None:
                return
            file_key, name, phase, task_index, args = message["run"]
            bench_file = files[file_key]
            participants = {p.name: p for p in bench_file.config.participants}
            if name not in participants:
                channel.send({"missing": f"{name} is not a participant of this side's bench file"})
                continue
            spec = IterationSpec(
                key=(file_key, name, task_index),
                participant=participants[name],
                participant_name=name,
                phase=phase,
                task_index=task_index,
                ordinal=0,
                invoke=calls[file_key],
                is_async=inspect.iscoroutinefunction(bench_file.task),
                args=dict(args),
            )
            plan = GroupPlan.build(
                group_id=spec.key,
                mode="participant",
                concurrency=1,
                stagger_delay_ms=0,
                iterations=[spec],
            )
            with capture.iteration() as output:
                outcome = executor.run_inline(plan, spec.key, release=True)
            payload = RecordPayload.of(file_key, name, outcome, redactor)
            error = outcome.error
            channel.send(
                {
                    "payload": payload.to_json(),
                    "error": None if error is None else redactor.text(_error_text(error)),
                    "output": output,
                }
            )
    finally:
        redaction.uninstall()
        executor.cancel_all()
        executor.shutdown(timeout=1.0)
