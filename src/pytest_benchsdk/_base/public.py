"""The one helper that names a public module as the home of what it re-exports.

A leaf (it imports nothing of the package), so every facade can use it, ``platform/`` included.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

__all__ = ["publish"]


def publish(module: str, namespace: Mapping[str, object]) -> None:
    """Name ``module`` as the home of each class and function in ``namespace["__all__"]`` that a
    private module defines (one whose dotted path has a part starting with ``_``).

    Reprs, tracebacks, docs and pickles (which find a class by ``__module__`` and
    ``__qualname__``) then name an importable public path that really exports the object. A
    name already published by another public module keeps that home: the first facade to
    publish a name is its home (the package root publishes its submodules in order).
    """
    for name in namespace["__all__"]:  # type: ignore[attr-defined]
        obj = namespace[name]
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # constants and instances have no __module__ of their own
        if any(part.startswith("_") for part in obj.__module__.split(".")):
            obj.__module__ = module
