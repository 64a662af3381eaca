"""Where the results store is: one rule for the pytest plugin and the ``pytest-benchsdk`` CLI.

The plugin gets the ini file and the rootdir from pytest; the CLI runs without pytest, so it
finds them here the way pytest does (:func:`find_inifile`): from the current directory upwards,
the first directory holding a pytest configuration file wins. Both then resolve the path with
:func:`resolve_store`, so ``pytest --bench`` and ``pytest-benchsdk runs`` read the same store.

A leaf: the standard library only (pytest must not be imported outside the glue).
"""

from __future__ import annotations

import configparser
import importlib
import sys
from pathlib import Path
from typing import Any

import attrs

from pytest_benchsdk._base.defaults import DEFAULT_STORE

__all__ = ["IniFile", "StoreLocation", "find_inifile", "resolve_store"]

#: The ini key naming the store, in every configuration file pytest reads.
INI_KEY = "bench_store"


@attrs.frozen
class IniFile:
    """A pytest configuration file: its directory (pytest's rootdir, against which a relative
    ``bench_store`` is resolved), its path (None for a value given with pytest's ``-o``) and
    its ``bench_store`` value (``""`` when it sets none)."""

    directory: Path
    path: Path | None = None
    bench_store: str = ""

    @property
    def origin(self) -> str:
        return f"{INI_KEY} in {self.path}" if self.path else f"{INI_KEY} (-o {INI_KEY}=…)"


@attrs.frozen
class StoreLocation:
    """The store's absolute path and where it came from, in the words messages use."""

    path: Path
    origin: str


def _ini_section(path: Path, section: str) -> dict[str, object] | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError, OSError):
        return None
    return dict(parser[section]) if parser.has_section(section) else None


def _toml(path: Path) -> dict[str, object]:
    # tomli below 3.11 (pytest's own dependency there), imported by name so that one mypy
    # run (python_version 3.10) checks both; here, not at import, as the plugin imports us.
    tomllib: Any = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
    try:
        with path.open("rb") as file:
            document: dict[str, object] = tomllib.load(file)
            return document
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        return {}


def _pyproject_options(path: Path) -> dict[str, object] | None:
    tool = _toml(path).get("tool")
    table = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return None
    ini_options = table.get("ini_options")
    if isinstance(ini_options, dict):
        return ini_options
    native = {key: value for key, value in table.items() if key != "ini_options"}
    return native or None


def _pytest_toml_options(path: Path) -> dict[str, object]:
    table = _toml(path).get("pytest")
    return table if isinstance(table, dict) else {}


def _options(path: Path) -> dict[str, object] | None:
    """The pytest options of ``path``, or None when pytest would not take it as its inifile
    (a ``tox.ini`` without ``[pytest]``, a ``setup.cfg`` without ``[tool:pytest]``, a
    ``pyproject.toml`` without ``[tool.pytest…]``)."""
    name = path.name
    if name in ("pytest.toml", ".pytest.toml"):
        return _pytest_toml_options(path)
    if name in ("pytest.ini", ".pytest.ini"):
        return _ini_section(path, "pytest") or {}  # the file counts even when empty
    if name == "pyproject.toml":
        return _pyproject_options(path)
    if name == "tox.ini":
        return _ini_section(path, "pytest")
    if name == "setup.cfg":
        return _ini_section(path, "tool:pytest")
    return None


#: The names pytest looks for in each directory, in its order of precedence.
_CONFIG_NAMES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)


def find_inifile(start: Path | None = None) -> IniFile | None:
    """The configuration file pytest would use when started in ``start`` (default: the
    current directory) with no arguments: the first of :data:`_CONFIG_NAMES` holding pytest
    options, in ``start`` or the nearest parent; failing that, the nearest ``pyproject.toml``
    (pytest's rootdir then, with no options). None when there is neither."""
    here = (start or Path.cwd()).absolute()
    pyproject: Path | None = None
    for directory in (here, *here.parents):
        for name in _CONFIG_NAMES:
            path = directory / name
            if not path.is_file():
                continue
            if name == "pyproject.toml" and pyproject is None:
                pyproject = path
            options = _options(path)
            if options is not None:
                value = options.get(INI_KEY, "")
                store = value.strip() if isinstance(value, str) else ""
                return IniFile(directory, path, store)
    return IniFile(pyproject.parent, pyproject) if pyproject is not None else None


def resolve_store(
    given: str | None,
    *,
    flag: str,
    given_base: Path,
    ini: IniFile | None,
    rootdir: Path,
    rootdir_words: str | None = None,
) -> StoreLocation:
    """The store's path: ``given`` (the ``flag`` on the command line, relative to
    ``given_base``) wins; then the ini file's ``bench_store`` (relative to the ini file's
    directory, which is the rootdir); then :data:`DEFAULT_STORE` under ``rootdir``
    (``rootdir_words`` names it in the origin; default its path)."""
    if given:
        return StoreLocation(_under(given_base, given), flag)
    if ini is not None and ini.bench_store:
        return StoreLocation(_under(ini.directory, ini.bench_store), ini.origin)
    return StoreLocation(
        _under(rootdir, DEFAULT_STORE),
        f"the default, {DEFAULT_STORE} under {rootdir_words or rootdir}",
    )


def _under(base: Path, raw: str) -> Path:
    path = Path(raw).expanduser()
    return path if path.is_absolute() else (base / path).absolute()
