"""The options reference page's tables (``docs/reference/options.md``), rendered from the option
table: one table per docs group (option, env / ini, meaning) and the ini keys' table.

The page holds the rendered tables between marker comments; a test checks that the page is what
:func:`update_page` makes of it, so that it cannot drift from the table. After changing an entry,
rewrite the page with::

    python -m pytest_benchsdk._plugin.options.reference docs/reference/options.md
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_benchsdk._plugin.options.table import DOCS_GROUPS, OPTIONS, Option

__all__ = ["option_usage", "render_ini_keys", "render_options", "update_page"]

_SOURCE = "src/pytest_benchsdk/_plugin/options/table.py"
_COMMAND = "python -m pytest_benchsdk._plugin.options.reference docs/reference/options.md"


def _cell(text: str) -> str:
    """A Markdown table cell: a ``|`` inside it is escaped."""
    return text.replace("\\|", "|").replace("|", "\\|")


def _row(*cells: str) -> str:
    return "|" + "|".join(f" {_cell(cell)} " if cell else " " for cell in cells) + "|"


def option_usage(option: Option) -> str:
    """The option column: each flag, with its value's metavar (or choices) where it takes one."""
    if not option.flags:
        return ""
    value = option.metavar or ("|".join(option.choices) if option.choices else None)
    if option.action == "store_true":
        value = None
    if value is not None and " " in value:
        value = f'"{value}"'
    if option.nargs == "?":
        return ", ".join(f"`{flag}[={value}]`" for flag in option.flags)
    suffix = "" if value is None else f" {value}"
    return ", ".join(f"`{flag}{suffix}`" for flag in option.flags)


def _source(option: Option) -> str:
    if option.doc_source is not None:
        return option.doc_source
    return f"ini `{option.ini}`" if option.ini is not None else ""


def render_options(options: Sequence[Option] = OPTIONS) -> str:
    """One section per docs group: a heading and the table of its entries."""
    parts: list[str] = []
    for key, title in DOCS_GROUPS:
        rows = [_row(option_usage(o), _source(o), o.doc) for o in options if o.group == key]
        if not rows:
            continue
        header = (
            "| option | from | what it does here |"
            if key == "compat"
            else ("| option | env / ini | meaning |")
        )
        parts += [f"### {title}", "", header, "|---|---|---|"]
        parts += [*rows, ""]
    return "\n".join(parts)


def render_ini_keys(options: Sequence[Option] = OPTIONS) -> str:
    """The ini keys' table: type, default, and the option each is like."""
    rows = [
        _row(f"`{o.ini}`", o.ini_doc_type, o.ini_doc_default, o.ini_doc_like or f"`{o.flags[0]}`")
        for o in options
        if o.ini is not None
    ]
    return "\n".join(["| ini key | type | default | like |", "|---|---|---|---|", *rows, ""])


def _block(name: str, body: str) -> str:
    return (
        f"% BEGIN {name}: generated from {_SOURCE} by `{_COMMAND}`; edit the table, not these "
        "lines.\n\n"
        f"{body}\n% END {name}"
    )


_BLOCK = re.compile(r"^% BEGIN (?P<name>[\w-]+):.*?^% END (?P=name)$", re.M | re.S)


def update_page(text: str) -> str:
    """``text`` (the page) with its generated blocks (``options``, ``ini-keys``) rendered anew."""
    bodies = {"options": render_options(), "ini-keys": render_ini_keys()}
    found: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in bodies:
            raise ValueError(f"unknown generated block {name!r}")
        found.add(name)
        return _block(name, bodies[name])

    updated = _BLOCK.sub(replace, text)
    missing = sorted(set(bodies) - found)
    if missing:
        raise ValueError(f"the page has no generated block {', '.join(missing)}")
    return updated


def main(argv: Sequence[str]) -> int:
    """Rewrite the page(s) named in ``argv``; status 1 when one was out of date."""
    changed = 0
    for name in argv:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        updated = update_page(text)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            print(f"rewrote {path}")
            changed += 1
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
