"""The documentation site: it builds with warnings as errors, and the dashboard's concept
cards and the docs' Concepts page show the same files (one home per explanation)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.app.panes import concept, concept_slug

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CONCEPTS = ROOT / "workbench" / "concepts"


def tab_concepts() -> set[str]:
    """The concept titles the tabs pass to :func:`~workbench.app.panes.intro` or
    :func:`~workbench.app.panes.controls_page` (their second argument, a string literal)."""
    titles = set()
    for module in (ROOT / "workbench" / "app").glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in CARDS:
                if isinstance(node.args[1], ast.Constant):
                    titles.add(node.args[1].value)
    return titles


CARDS = ("intro", "controls_page")


@pytest.mark.slow
def test_the_docs_build_without_a_warning(tmp_path):
    """sphinx-build -W: a broken reference, docstring or include fails the test. The notebooks
    are rendered without executing them here (nb_execution_mode=off): nbmake runs each one in
    the same suite; ``./dev docs`` builds them executed.  Sphinx's plain ``basic`` theme: furo's
    navigation tree, rebuilt for each of the 150 pages, was 40 % of the build (91 -> 55 s)
    and checks nothing the references do not."""
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}  # this checkout's package
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q"]
        + ["-D", "nb_execution_mode=off", "-D", "html_theme=basic"]
        + ["-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    page = " ".join((tmp_path / "html" / "concepts.html").read_text(encoding="utf-8").split())
    assert "the histogram of that lateness for one sensor" in page  # the included concept
    assert (tmp_path / "html" / "notebooks" / "02-partitions.html").exists()
    api = tmp_path / "html" / "generated" / "workbench.operators.ptjoin.html"
    assert "PTJoin" in api.read_text(encoding="utf-8")  # the API page from the docstrings


def test_every_tab_concept_is_a_file_on_the_concepts_page():
    """Each title a tab passes to its concept card names a file of workbench/concepts, and the
    docs' Concepts page includes every such file under the same title."""
    titles = tab_concepts()
    assert len(titles) >= 8, titles
    page = (DOCS / "concepts.md").read_text(encoding="utf-8")
    for title in titles:
        slug = concept_slug(title)
        assert (CONCEPTS / f"{slug}.md").is_file(), title
        assert f"## {title}\n\n```{{include}} ../workbench/concepts/{slug}.md\n```" in page
        assert concept(title) == (CONCEPTS / f"{slug}.md").read_text(encoding="utf-8").strip()
    assert {p.stem for p in CONCEPTS.glob("*.md")} == {concept_slug(t) for t in titles}


def test_the_readme_is_short_and_names_no_path_outside_the_repository():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    blocks = re.findall(r"```\w*\n(.*?)```", readme, flags=re.DOTALL)
    assert blocks[:2] == ["./dev dashboard\n", "./dev test\n"]
    for text in [readme, *(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))]:
        assert "../shared" not in text and "SOURCE.md" not in text
        assert not re.search(r"\bissue \d+", text)
    shot = re.search(r"!\[[^]]*\]\((docs/_static/[^)]+\.png)\)", readme)  # the screenshot
    assert shot and (ROOT / shot.group(1)).is_file()
