"""``PYTEST_CURRENT_TEST`` stays in the environment while a bench session runs.

pytest sets the variable at each item's setup and *removes* it at the end of each item's
teardown, on the main thread. In a bench session benchmark code runs on other threads at the
same time (an iteration group on the executor's event loop, sync tasks on their threads, the
platform's outbox), and ``os.environ`` cannot be read whole while a key goes away: iterating it
lists the keys, then looks each one up, so a removal in between raises
``KeyError: 'PYTEST_CURRENT_TEST'`` in whatever iterated it (``httpx.AsyncClient()`` does,
through ``urllib.request.getproxies()``). This is pytest issue #10876, open since 2023.

Setting a value for a key that exists never races that way, so while a session runs bench
items the variable is updated as pytest does but never removed: between items it names the
item that ended last (``… (teardown)``). It is removed when the session is over, if no other
thread is left that could be reading the environment.

pytest has no hook for this: the session swaps ``_pytest.runner._update_current_test_var``
(read at each call) and puts it back at unconfigure. Should a pytest release drop that
function, nothing is swapped and pytest's own behaviour stays.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, Final

from _pytest import runner

__all__ = ["CURRENT_TEST", "KeepCurrentTest"]

CURRENT_TEST: Final = "PYTEST_CURRENT_TEST"

_FUNCTION: Final = "_update_current_test_var"


class KeepCurrentTest:
    """Swaps pytest's update of the variable for one that never removes it (see the module)."""

    def __init__(self) -> None:
        self._original: Callable[..., None] | None = None
        self._update: Callable[..., None] | None = None

    @property
    def installed(self) -> bool:
        return self._update is not None

    def install(self) -> None:
        original = getattr(runner, _FUNCTION, None)
        if self._update is not None or not callable(original):
            return

        def update(item: Any, when: str | None) -> None:
            if when is None and CURRENT_TEST in os.environ:
                return  # keep it: another thread may be iterating the environment
            original(item, when)

        setattr(runner, _FUNCTION, update)
        self._original, self._update = original, update

    def uninstall(self) -> None:
        if self._update is None:
            return
        # Only if still ours (a plugin that swapped it after us keeps its own).
        if getattr(runner, _FUNCTION, None) is self._update:
            setattr(runner, _FUNCTION, self._original)
        self._original = self._update = None
        if threading.active_count() == 1:
            os.environ.pop(CURRENT_TEST, None)
