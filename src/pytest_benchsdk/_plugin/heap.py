"""What collection made, kept out of the cyclic GC's way while bench items run.

Collection makes tens of objects per bench item (the item, its request, keywords, the
iteration it runs) and every one lives until the session ends. Left to the cyclic GC, each
allocation-triggered full collection scans all of them again: at 20,000 items that is a third
of a second while collecting and a 400 ms pause inside whatever iteration runs later. So a
bench file's items are made with the cyclic GC paused (what they allocate lives on; temporaries
go with their last reference) and moved out of its reach at once (``gc.freeze``), the rest of
what collection made follows once it is done, and all of it is handed back (``gc.unfreeze``)
when the session ends. A process that froze objects of its own is left as it is: unfreezing
would hand back its objects too.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import pytest

__all__ = ["CollectionHeap"]

_KEY = pytest.StashKey["CollectionHeap"]()


class CollectionHeap:
    """This process's frozen collection (one per config: :meth:`of`)."""

    def __init__(self) -> None:
        # Decided at the first freeze, not at configure: a conftest's pytest_configure may
        # still freeze objects of its own after this plugin's.
        self._ours: bool | None = None
        self._frozen = False

    def install(self, config: pytest.Config) -> None:
        config.stash[_KEY] = self

    @staticmethod
    def of(config: pytest.Config) -> CollectionHeap | None:
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

    def release(self) -> None:
        """Hand everything frozen back to the GC (the session is over)."""
        if self._frozen:
            self._frozen = False
            gc.unfreeze()
