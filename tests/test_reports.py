"""``workbench reports``: executed notebooks as self-contained HTML, and the index page."""

from __future__ import annotations

import nbformat
import pytest

from workbench.viz.reports import build_reports, checkout_notebooks, fetched_urls, notebook_paths


def test_fetched_urls_finds_what_a_browser_would_load():
    page = (
        '<script src="https://cdn.example/a.js"></script><link rel="stylesheet" '
        'href="http://cdn.example/b.css"><a href="https://docs.example">docs</a>'
        '{"type":"object","name":"ImportedStyleSheet","id":"x","attributes":'
        '{"url":"https://cdn.example/c.css"}}const js_urls = ["https://cdn.example/d.js"];'
        "<style>@import url(https://cdn.example/e.css);</style>"
    )
    assert fetched_urls(page) == [
        "http://cdn.example/b.css",
        "https://cdn.example/a.js",
        "https://cdn.example/c.css",
        "https://cdn.example/d.js",
        "https://cdn.example/e.css",
    ]
    assert fetched_urls('<script>const js_urls = [];</script><a href="https://x.y">') == []


@pytest.mark.slow
def test_a_notebook_becomes_an_offline_report_with_an_index(tmp_path):
    notebook = checkout_notebooks() / "01-histogram-timestamps.ipynb"
    (report,) = build_reports(tmp_path / "out", notebooks=[notebook])
    page = report.html.read_text(encoding="utf-8")
    assert report.html == tmp_path / "out" / "01-histogram-timestamps.html"
    assert report.title.startswith("Histogram timestamps")
    assert fetched_urls(page) == []  # BokehJS and Panel's styles are inline
    assert "Bokeh.set_log_level" in page and "InlineStyleSheet" in page
    assert "0.925" in page and "208.59" in page  # the executed outputs are there
    assert 0 < report.cpu_seconds  # the kernel's CPU, read once it is reaped
    index = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert 'href="01-histogram-timestamps.html"' in index and report.title in index
    assert 'href="01-histogram-timestamps.ipynb"' in index
    executed = nbformat.read(report.executed, as_version=4)  # outputs kept, beside the HTML
    assert any("0.925" in str(cell.get("outputs", "")) for cell in executed.cells)
    assert f"{report.cpu_seconds:.1f} CPU s" in index


def test_notebook_paths_takes_folders_and_notebooks_and_names_a_bad_path(tmp_path, monkeypatch):
    folder = checkout_notebooks()
    assert folder is not None and notebook_paths() == sorted(folder.glob("*.ipynb"))
    (tmp_path / "b.ipynb").write_text("{}")
    (tmp_path / "a.ipynb").write_text("{}")
    one = folder / "02-partitions.ipynb"
    assert notebook_paths([tmp_path, one]) == [tmp_path / "a.ipynb", tmp_path / "b.ipynb", one]
    with pytest.raises(FileNotFoundError, match="'nowhere' is no notebook or folder"):
        notebook_paths(["nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no notebooks"):
        notebook_paths([tmp_path / "empty"])


def test_reports_refuse_to_overwrite_the_notebooks_they_run(tmp_path):
    notebook = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    with pytest.raises(ValueError, match="out = .* holds the notebooks themselves"):
        build_reports(tmp_path, notebooks=[notebook])
