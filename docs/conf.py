"""Sphinx configuration of the pytest-benchsdk documentation.

Why Sphinx: it is what pytest, pytest-xdist, pluggy and pytest-benchmark document themselves
with, so a pytest user finds the layout they know, and ``sphinx.ext.autodoc`` reads our
docstrings as they are written (reST-flavoured, with ``:func:`` / ``:class:`` roles) without
rewriting them. Pages are Markdown (MyST), so the README's prose moved over with little
rewriting; the theme is furo. CI builds the site with warnings as errors
(``sphinx-build -W --keep-going -b html docs <dir>``).
"""

from __future__ import annotations

project = "pytest-benchsdk"
author = "pytest-benchsdk developers"
copyright = "2026, pytest-benchsdk developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Headings get anchors (GitHub's slugs) so pages link to each other's sections:
# [Thresholds](../howto/thresholds-warmup.md#thresholds).
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]

# The API pages document only the public modules (never a private ``_x`` module: their paths
# change). Members appear in source order, with their signatures' type hints in the text.
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "description"
napoleon_google_docstring = False

html_theme = "furo"
html_title = "pytest-benchsdk"
html_static_path: list[str] = []
