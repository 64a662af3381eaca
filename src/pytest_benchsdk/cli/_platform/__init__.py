"""``pytest-benchsdk platform …``: upstream ``bench``'s platform commands (``@benchsdk/cli``).

``bench X …`` is ``pytest-benchsdk platform X …``: the same commands, options, output and exit
statuses (0 ok; 1 any error, API errors printed as ``API error: <message>`` and the response
body; 2 an :class:`~pytest_benchsdk.platform.AuthError`). A view layer above ``platform/``: the
store CLI imports it only when its ``platform`` command runs, so the store commands never load
the platform code.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata

from pytest_benchsdk.cli._platform._argv import UsageError, parse_global_args
from pytest_benchsdk.cli._platform._commands import USAGE, Invocation, command_help, dispatch
from pytest_benchsdk.platform._auth import DeviceFlowError, load_config
from pytest_benchsdk.platform._errors import AuthError, BenchmarkApiError, PlatformConnectionError

__all__ = ["main"]


def _version() -> str:
    try:
        return metadata.version("pytest-benchsdk")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def main(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Run one platform command (``argv`` without ``platform``); returns the exit status.

    ``env`` defaults to ``os.environ`` and ``home`` to the user's home (``~/.benchsdk``);
    ``sleep``/``clock`` drive the device-login poll.
    """

    def out(text: str) -> None:
        sys.stdout.write(text + "\n")

    def err(text: str) -> None:
        sys.stderr.write(text + "\n")

    try:
        args = parse_global_args(argv)
    except UsageError as exc:
        err(str(exc))
        return 1
    if args.flag("version"):
        out(_version())
        return 0
    if args.flag("help") or not args.positionals:
        out(command_help(args.positionals[0]) if args.flag("help") and args.positionals else USAGE)
        return 0
    verbose = args.flag("verbose")
    try:
        invocation = Invocation(
            args,
            load_config(home),
            os.environ if env is None else env,
            home,
            out,
            err,
            sleep=sleep,
            clock=clock,
        )
        dispatch(invocation, args.positionals)
    except BenchmarkApiError as exc:
        err(f"API error: {exc}")
        if exc.body:
            err(exc.body)
        return 1
    except AuthError as exc:
        err(str(exc))
        if verbose:
            err(traceback.format_exc().rstrip())
        return 2
    except (UsageError, DeviceFlowError, PlatformConnectionError, ValueError) as exc:
        err(str(exc))
        if verbose:
            err(traceback.format_exc().rstrip())
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        err(f"{exc.strerror or exc}{where}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
