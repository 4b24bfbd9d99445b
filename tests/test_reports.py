"""``workbench reports``: executed notebooks as self-contained HTML, and the index page."""

from __future__ import annotations

import pytest

from workbench.viz.reports import NOTEBOOKS, build_reports, fetched_urls


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
    notebook = NOTEBOOKS / "01-histogram-timestamps.ipynb"
    (report,) = build_reports(tmp_path / "out", notebooks=[notebook])
    page = report.html.read_text(encoding="utf-8")
    assert report.html == tmp_path / "out" / "01-histogram-timestamps.html"
    assert report.title.startswith("Histogram timestamps")
    assert fetched_urls(page) == []  # BokehJS and Panel's styles are inline
    assert "Bokeh.set_log_level" in page and "InlineStyleSheet" in page
    assert "0.925" in page and "208.59" in page  # the executed outputs are there
    index = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert 'href="01-histogram-timestamps.html"' in index and report.title in index
