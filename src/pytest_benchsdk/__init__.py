"""pytest-benchsdk: run benchmarks as pytest items, with upstream @benchsdk/runner semantics."""

from __future__ import annotations

__all__: list[str] = []
