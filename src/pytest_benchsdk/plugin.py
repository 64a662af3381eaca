"""pytest plugin entry point (hooks only)."""

from __future__ import annotations
