"""What a side's process counts as imported from the other side's tree (``imported_from``)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from pytest_benchsdk._ab.side_program import imported_from


def _module(monkeypatch: pytest.MonkeyPatch, name: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    module = types.ModuleType(name)
    module.__file__ = str(path)
    monkeypatch.setitem(sys.modules, name, module)


def test_the_other_tree_s_code_counts_but_not_a_virtualenv_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "repository"
    venv = other / ".venv"
    site = venv / "lib" / "python3" / "site-packages"
    _module(monkeypatch, "benchsdk_probe_code", other / "src" / "probe" / "__init__.py")
    _module(monkeypatch, "benchsdk_probe_installed", site / "installed" / "__init__.py")
    _module(monkeypatch, "benchsdk_probe_bench", other / "bench_x.py")
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(sys, "exec_prefix", str(venv))
    found = imported_from(str(other), [str(other / "bench_x.py")])
    assert [line.split()[0] for line in found] == ["benchsdk_probe_code"]
