"""Sphinx configuration of the workbench's documentation: MyST Markdown pages, the notebooks
through myst-nb, and the API reference generated from the package's docstrings.

Build it with ``./dev docs`` (notebooks executed, into ``build/docs``) or
``sphinx-build -W -b html docs build/docs``.
"""

from __future__ import annotations

import re

import workbench

project = "Uncertain-time stream workbench"
author = "the workbench contributors"
copyright = "the workbench contributors, Apache-2.0"  # noqa: A001 (Sphinx's name)
release = version = workbench.__version__

extensions = [
    "myst_nb",  # MyST Markdown pages (it loads myst_parser) and the notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
]

# .rst first: autosummary writes the API pages in reStructuredText
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "notebooks/.ipynb_checkpoints", "notebooks/**/.ipynb_checkpoints"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# The notebooks are rendered executed: nb_execution_mode is the one setting. "force" runs every
# notebook at each build (./dev docs); the docs test in tests/test_docs.py builds with
# -D nb_execution_mode=off, because nbmake already executes each notebook in the same suite.
nb_execution_mode = "force"
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_merge_streams = True
# The notebooks' HoloViews/Panel outputs carry their own JavaScript mime bundles beside the
# HTML that myst-nb shows; the bundles myst-nb does not know are left out on purpose.
suppress_warnings = ["mystnb.unknown_mime_type"]
# Two modules define a Snapshot (a Spark job's and the replay's protocol); a type hint naming it
# resolves to either page, so an ambiguous type-hint link is not an error.
suppress_warnings += ["ref.python"]

autosummary_generate = True
# API objects stay out of the navigation (each module page lists its own): a site-wide
# navigation of every function cost each page most of its build time.
toc_object_entries = False
# Each object is documented in the module that defines it (not again where a package re-exports it).
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"

html_theme = "furo"
html_title = "Uncertain-time stream workbench"
html_static_path = ["_static"]

# The docstrings write probabilities as they read, P(|Xi - Xj| <= d), where reStructuredText
# sees substitution references: pipes outside literals, doctests and literal blocks are escaped.
_CODE = re.compile(r"(``.*?``|`[^`]*`)")


def _escape_pipes(line: str) -> str:
    parts = _CODE.split(line)
    return "".join(p if k % 2 else p.replace("|", r"\|") for k, p in enumerate(parts))


def escape_pipes(app, what, name, obj, options, lines: list[str]) -> None:
    in_doctest = in_literal = False
    literal_indent = 0
    for k, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if in_literal and stripped and indent <= literal_indent:
            in_literal = False
        if stripped.startswith(">>>"):
            in_doctest = True
        elif not stripped:
            in_doctest = False
        if in_doctest or in_literal:
            continue
        lines[k] = _escape_pipes(line)
        if stripped.endswith("::"):
            in_literal, literal_indent = True, indent


def setup(app) -> None:
    app.connect("autodoc-process-docstring", escape_pipes)
