"""xdist's scope schedulers (``loadgroup``, ``loadscope``, ``loadfile``) when a worker dies.

pytest-xdist 3.8's :class:`~xdist.scheduler.loadscope.LoadScopeScheduling` (which the other two
extend) has three faults after a worker crash (issue 48, item 4; upstream pytest-xdist #1323,
#1327, #1378):

* the dead worker's whole workload goes back on the queue, its finished work units too: a
  worker later given one of those is sent an empty list of tests, never reports one done, and
  so is never given more work or told to stop: the session waits forever;
* a worker is given more work only when it reports a test done, and an xdist worker runs a
  test only once it knows the next one (or that it must stop): a replacement worker given a
  work unit of one test (a bench file at concurrency 1 spreads its items one by one; the last
  iteration of a group) holds it forever, and so does the session;
* the test the worker died in goes back on the queue with the rest of its work unit, after
  xdist has already reported it failed: it runs again (the same item reported twice, its
  iteration recorded twice; a test that kills its worker kills each replacement in turn).

:func:`crash_safe` makes a scheduler class whose ``remove_node`` requeues only what is still
to run (the test that was running stays failed, as under ``--dist load``) and whose
rescheduling leaves every worker with at least two tests to go or told to stop.
"""

from __future__ import annotations

from typing import Any

__all__ = ["crash_safe"]

_CACHE: dict[type, type] = {}


def crash_safe(base: type) -> type:
    """A subclass of ``base`` (xdist's ``LoadScopeScheduling`` or a subclass) that survives a
    worker's crash (see the module's docstring)."""
    made = _CACHE.get(base)
    if made is not None:
        return made

    class CrashSafe(base):  # type: ignore[misc]
        def remove_node(self, node: Any) -> str | None:
            workload: dict[str, dict[str, bool]] = self.assigned_work.pop(node)
            crashitem = next(
                (
                    nodeid
                    for unit in workload.values()
                    for nodeid, completed in unit.items()
                    if not completed
                ),
                None,
            )
            if crashitem is None:
                return None  # a worker that ended normally
            # xdist reports the test it died in as failed: it does not run again.
            for unit in workload.values():
                if crashitem in unit:
                    unit[crashitem] = True
            # Only work units with tests still to run go back on the queue.
            for scope, unit in workload.items():
                if not all(unit.values()):
                    self.workqueue[scope] = unit
            for other in list(self.assigned_work):
                self._reschedule(other)
            return crashitem

        def _reschedule(self, node: Any) -> None:
            if node not in self.registered_collections:
                return  # a replacement still collecting: scheduled once it has collected
            super()._reschedule(node)
            # A worker runs its last test only once it is given another or told to stop: give
            # it work until it has two tests to go, or tell it to stop (xdist's own
            # _reschedule does the one or the other when the queue runs dry).
            while not node.shutting_down and self._pending_of(self.assigned_work[node]) < 2:
                if not self.workqueue:
                    node.shutdown()
                    break
                self._assign_work_unit(node)

    CrashSafe.__name__ = CrashSafe.__qualname__ = f"CrashSafe{base.__name__}"
    _CACHE[base] = CrashSafe
    return CrashSafe
