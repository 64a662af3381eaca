"""Bench items under pytest-xdist's ``--dist loadgroup``: groups that stay in one process, node
ids that stay plain.

xdist groups items by rewriting each one's node id to ``<nodeid>@<group>`` on the workers
(``remote.py``, ``pytest_collection_modifyitems``); its scheduler reads the group back from the
ids the workers send when collection finishes (``scheduler/loadgroup.py``: the text after the
last ``@``, when that ``@`` follows the last ``]``). A rewritten id would be the item's id
everywhere else too: the summary, junitxml, the ``lastfailed`` and stepwise caches (so ``--lf``
and ``--sw`` match nothing) and what a user pastes back (``ERROR: not found``); pytest >= 9.2 also
parses it as a structured id whose parameters then swallow the group (the stray ``]`` of
``task[json-0]@bench_x.py::json]``).

So bench items (:class:`LoadgroupNodeId`) keep their plain id: xdist's rewrite is ignored, and
:func:`shown_to_xdist` gives the ids the ``@group`` suffix only while xdist sends them to its
scheduler. Group names (:func:`group_name`) contain no ``@``, ``[``, ``]`` or ``::`` whatever the
participant is called, so the scheduler always reads them whole. Ids that still carry a suffix
(an old cache, a pasted line of an older run, xdist's report for a crashed worker) are made plain
again by :func:`plain_node_id`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

import pytest

__all__ = [
    "BENCH_ITEM_PREFIXES",
    "LoadgroupNodeId",
    "group_name",
    "plain_args",
    "plain_cached_ids",
    "plain_node_id",
    "shown_to_xdist",
    "xdist_suffix",
]

#: How the names of bench items start (iterations, warm-up iterations, thresholds).
BENCH_ITEM_PREFIXES = ("task[", "warmup[", "threshold[")

#: A group name of ours: the quoted file key, ``:``, the quoted participant (or ``round``);
#: xdist joins several groups of one item with ``_``.
_GROUP = re.compile(r"(?P<file>[A-Za-z0-9_.~%/-]+):[A-Za-z0-9_.~%-]+")


def group_name(file_key: str, unit: str) -> str:
    """The xdist group of a participant's items (``unit``: the participant, or ``round`` for a
    file run round by round): readable (``bench_x.py:json``), unique per file and unit, and
    free of the characters xdist's scheduler and pytest's node ids give a meaning to."""
    return f"{quote(file_key, safe='/')}:{quote(unit, safe='')}"


def _is_group_suffix(suffix: str, path: str) -> bool:
    """Whether ``suffix`` (after ``@``) is a group xdist appended to an item of ``path``: ours
    (``bench_x.py:json``) or an older release's (``bench_x.py::json``, also with the stray
    ``]`` pytest >= 9.2 printed). Either starts with the file's path, so a participant name
    that contains ``]@`` is not mistaken for one (unless the file's name and ``:`` follow)."""
    basename = PurePosixPath(path.replace("\\", "/")).name
    if not basename or "[" in suffix:
        return False
    old_file, sep, _ = suffix.partition("::")
    if sep:
        return old_file.endswith(basename)
    match = _GROUP.fullmatch(suffix.removesuffix("]"))
    return match is not None and match["file"].endswith(quote(basename, safe="/"))


def plain_node_id(nodeid: str) -> str:
    """``nodeid`` without the ``@<group>`` xdist's loadgroup appends to a bench item's id
    (``bench_x.py::task[json-0]@bench_x.py:json`` → ``bench_x.py::task[json-0]``); any other
    id comes back unchanged."""
    path, sep, rest = nodeid.partition("::")
    if not sep or "@" not in rest or not rest.startswith(BENCH_ITEM_PREFIXES):
        return nodeid
    # The last "]@" whose tail is a group: participant names may contain "]@" themselves.
    for match in reversed(list(re.finditer(r"\]@", rest))):
        if _is_group_suffix(rest[match.end() :], path):
            return f"{path}::{rest[: match.start() + 1]}"
    return nodeid


def xdist_suffix(item: pytest.Item) -> str | None:
    """The ``@<groups>`` xdist's loadgroup would append to ``item``'s id (its ``xdist_group``
    markers, as ``remote.py`` joins them), or None without any."""
    names: set[str] = set()
    for mark in item.iter_markers("xdist_group"):
        names.add(str(mark.args[0] if mark.args else mark.kwargs.get("name", "default")))
    return f"@{'_'.join(sorted(names))}" if names else None


class LoadgroupNodeId:
    """Mix into a bench item class (before the pytest base): its node id stays plain.

    pytest < 9.2 keeps the node id in ``_nodeid``; pytest >= 9.2 in ``_id`` (structured, read
    by ``--lf``, ``--sw``, ``--deselect``, junitxml and reports). xdist assigns ``_nodeid`` to
    tag an item with its group: that assignment is ignored here (see :func:`shown_to_xdist`).
    """

    __slots__ = ()

    def _structure_id(self) -> None:
        """Re-parse the id pytest >= 9.2 built from the node's name (``path`` + one name):
        ``NodeId.parse("bench_x.py::task[p1-0]")`` gives it the shape of a parametrized test's
        id, which is what ``--lf``, ``--sw`` and ``--deselect`` build from the cache and the
        command line, so they find the item."""
        node_id = getattr(self, "_id", None)
        if node_id is not None:
            self._set_id_text(str(node_id))

    def _set_id_text(self, value: str) -> None:
        node_id = getattr(self, "_id", None)
        parse = getattr(type(node_id), "parse", None)
        if callable(parse):
            setattr(self, "_id", parse(value))  # noqa: B010 (slots: set on the pytest base)
        else:
            self.__dict__["_bench_nodeid"] = value

    def _id_text(self) -> str | None:
        node_id = getattr(self, "_id", None)
        if node_id is not None:
            return str(node_id)
        value: str | None = self.__dict__.get("_bench_nodeid")
        return value

    @property
    def _nodeid(self) -> str:
        text = self._id_text()
        assert text is not None
        return text

    @_nodeid.setter
    def _nodeid(self, value: str) -> None:
        current = self._id_text()
        if current is not None and value.startswith(f"{current}@"):
            return  # xdist's loadgroup tag: see shown_to_xdist
        self._set_id_text(value)


@contextlib.contextmanager
def shown_to_xdist(items: Iterable[pytest.Item]) -> Iterator[None]:
    """While the block runs (xdist's ``pytest_collection_finish``, which sends the worker's
    collected ids to the scheduler), ``items`` carry their ``@<group>`` suffix; afterwards
    their plain ids again."""
    tagged: list[tuple[Any, str]] = []
    for item in items:
        suffix = xdist_suffix(item)
        if suffix is None or not isinstance(item, LoadgroupNodeId):
            continue
        plain = item.nodeid
        item._set_id_text(plain + suffix)
        tagged.append((item, plain))
    try:
        yield
    finally:
        for item, plain in tagged:
            item._set_id_text(plain)


def plain_args(args: list[str]) -> None:
    """Make pasted bench item ids with a group suffix plain, in place (pytest collects the
    plain id; ``bench_x.py::task[json-0]@bench_x.py:json`` would be ``not found``)."""
    args[:] = [plain_node_id(arg) for arg in args]


def _plain_key(key: Any) -> Any:
    text = str(key)
    plain = plain_node_id(text)
    if plain == text:
        return key
    parse = getattr(type(key), "parse", None)
    return parse(plain) if callable(parse) else plain


def plain_cached_ids(config: pytest.Config) -> None:
    """Make the ids kept by ``--lf`` / ``--ff`` (``cache/lastfailed``) and ``--sw``
    (``cache/stepwise``) plain, where a release before this one cached them with xdist's
    group suffix, so they select the items again."""
    lastfailed = getattr(config.pluginmanager.get_plugin("lfplugin"), "lastfailed", None)
    if isinstance(lastfailed, dict) and any("@" in str(key) for key in lastfailed):
        entries = [(_plain_key(key), value) for key, value in lastfailed.items()]
        lastfailed.clear()
        lastfailed.update(entries)
    stepwise = config.pluginmanager.get_plugin("stepwiseplugin")
    # pytest >= 9.2 keeps the id in cached_info.last_failed, earlier releases in lastfailed.
    for holder, name in (
        (getattr(stepwise, "cached_info", None), "last_failed"),
        (stepwise, "lastfailed"),
    ):
        value = getattr(holder, name, None) if holder is not None else None
        if value is not None and "@" in str(value):
            setattr(holder, name, _plain_key(value))
