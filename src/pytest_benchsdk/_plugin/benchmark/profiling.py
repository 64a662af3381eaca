"""``--benchmark-cprofile``: one more call of a benchmarked test's function (or
``--benchmark-cprofile-loops`` calls) under :mod:`cProfile` after its rounds, kept as
pytest-benchmark keeps it: the top functions by a column, each row ``ncalls_recursion``,
``ncalls``, ``tottime``, ``tottime_per``, ``cumtime``, ``cumtime_per``, ``function_name``
(pytest-benchmark's ``get_cprofile_functions``), and with ``--benchmark-cprofile-dump`` the
profile as ``PREFIX-<test>.prof``."""

from __future__ import annotations

import cProfile
import os
import pstats
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

__all__ = ["COLUMNS", "profile_call"]

#: pytest-benchmark's cProfile columns, in its order of preference.
COLUMNS: Final = (
    "cumtime",
    "tottime",
    "ncalls",
    "ncalls_recursion",
    "tottime_per",
    "cumtime_per",
    "function_name",
)


def _slugify(name: str) -> str:
    for c in "\\/:*?<>| ":
        name = name.replace(c, "_").replace("__", "_")
    return name


def _rows(stats: pstats.Stats) -> list[dict[str, Any]]:
    root = os.path.dirname(os.getcwd())
    out = []
    for (path, line, function), info in stats.stats.items():  # type: ignore[attr-defined]
        pcalls, ncalls, tottime, cumtime = info[:4]
        if path.startswith(root):
            path = path[len(root) :].lstrip("/")
        out.append(
            {
                "ncalls_recursion": str(pcalls) if pcalls == ncalls else f"{ncalls}/{pcalls}",
                "ncalls": ncalls,
                "tottime": tottime,
                "tottime_per": tottime / pcalls if pcalls > 0 else 0,
                "cumtime": cumtime,
                "cumtime_per": cumtime / pcalls if pcalls > 0 else 0,
                "function_name": f"{path}:{line}({function})",
            }
        )
    return out


def profile_call(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    sort: str,
    loops: int,
    top: int,
    dump: str | None,
    name: str,
) -> list[dict[str, Any]]:
    """``loops`` calls of ``fn`` profiled: the ``top`` functions by ``sort`` (descending), as
    pytest-benchmark lists them; the profile dumped to ``{dump}-{name}.prof`` when asked."""
    profile = cProfile.Profile()
    for _ in range(loops):
        profile.runcall(fn, *args, **kwargs)
    stats = pstats.Stats(profile)
    if dump is not None:
        target = Path(f"{dump}-{_slugify(name)}.prof")
        target.parent.mkdir(parents=True, exist_ok=True)
        stats.dump_stats(target)
    rows = _rows(stats)
    rows.sort(key=lambda row: row[sort], reverse=True)
    return rows[:top]
