"""Keeping ``--dist loadgroup`` working for bench items on every pytest version.

pytest-xdist's ``--dist loadgroup`` tags items by assigning ``item._nodeid`` (appending
``@<group>``), which pytest >= 9.2 no longer reads: it keeps the node id in ``_id``. Items that
route the assignment (:class:`LoadgroupNodeId`) stay in their group there too; on older pytest
the property is simply where the node id lives.
"""

from __future__ import annotations

__all__ = ["LoadgroupNodeId"]


class LoadgroupNodeId:
    """Mix into a pytest item class (before the pytest base) to route ``_nodeid``."""

    __slots__ = ()

    @property
    def _nodeid(self) -> str:
        node_id = getattr(self, "_id", None)
        if node_id is not None:
            return str(node_id)
        value: str = self.__dict__["_bench_nodeid"]
        return value

    @_nodeid.setter
    def _nodeid(self, value: str) -> None:
        node_id = getattr(self, "_id", None)
        parse = getattr(type(node_id), "parse", None)
        if callable(parse):
            setattr(self, "_id", parse(value))  # noqa: B010 (slots: set on the pytest base)
        else:
            self.__dict__["_bench_nodeid"] = value
