"""The session's long-lived objects, kept out of the cyclic GC's way while bench items run.

Collection makes tens of objects per bench item (the item, its request, keywords, the
iteration it runs), and running it leaves more (pytest's reports, the item's properties):
every one lives until the session ends. Left to the cyclic GC, each allocation-triggered full
collection scans all of them again, and the pause lands in whatever iteration is running: at
20,000 items 0.37 s of collections while collecting, and three pauses of about 100 ms each
while running. So a bench file's items are made with the cyclic GC paused (what they allocate
lives on; temporaries go with their last reference) and moved out of its reach at once
(``gc.freeze``), the rest of what collection made follows once it is done, what the run keeps
follows every :data:`SETTLE_EVERY` items (after a collection of the young generations, so no
garbage cycle is frozen), and all of it is handed back (``gc.unfreeze``) when the session
ends. A process that froze objects of its own is left as it is: unfreezing would hand back
its objects too; so is one that turned its GC off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Final

import pytest

__all__ = ["FrozenHeap"]

_KEY = pytest.StashKey["FrozenHeap"]()

#: Items between two freezes of what the run keeps (a young collection and a freeze: about a
#: millisecond each time).
SETTLE_EVERY: Final = 1000


class FrozenHeap:
    """This process's frozen objects (one per config: :meth:`of`)."""

    def __init__(self) -> None:
        # Decided at the first freeze, not at configure: a conftest's pytest_configure may
        # still freeze objects of its own after this plugin's.
        self._ours: bool | None = None
        self._frozen = False
        self._ran = 0

    def install(self, config: pytest.Config) -> None:
        config.stash[_KEY] = self

    @staticmethod
    def of(config: pytest.Config) -> FrozenHeap | None:
        return config.stash.get(_KEY, None)

    def _may_freeze(self) -> bool:
        if self._ours is None:
            self._ours = gc.get_freeze_count() == 0
        return self._ours

    @contextlib.contextmanager
    def making_items(self) -> Iterator[None]:
        """Around making a bench file's items: no cyclic collection while they are allocated
        (each would scan every item so far), then they are frozen."""
        if not gc.isenabled() or not self._may_freeze():
            yield  # a process that manages its GC itself
            return
        gc.disable()
        try:
            yield
        finally:
            gc.enable()
            gc.freeze()
            self._frozen = True

    def freeze(self) -> None:
        """Freeze what collection made (once it is done, for a session that runs bench items)."""
        if self._may_freeze():
            gc.freeze()
            self._frozen = True

    def item_ran(self) -> None:
        """An item ran. Every :data:`SETTLE_EVERY` items of a frozen session, what the run
        keeps too (pytest's reports and the items' properties, until the session ends) is
        frozen, after a collection of the young generations: the reference cycles the last
        iterations left behind are garbage, and freezing would keep them."""
        if not self._frozen:
            return
        self._ran += 1
        if self._ran % SETTLE_EVERY == 0 and gc.isenabled():
            gc.collect(1)
            gc.freeze()

    def release(self) -> None:
        """Hand everything frozen back to the GC (the session is over)."""
        if self._frozen:
            self._frozen = False
            gc.unfreeze()
