"""A pane changed while its tab is hidden keeps the page's stylesheets on the server
(:func:`workbench.app.offline_styles.keep_styles_local`), in a session's document in-process.

The first test pins Panel's behaviour that the fix exists for: when it passes no more, Panel
has fixed it and the fix can go."""

from __future__ import annotations

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import ImportedStyleSheet
from panel.io.resources import CDN_DIST, get_dist_path
from panel.io.state import set_curdoc
from panel.reactive import Reactive

from workbench.app.dashboard import TAB_BUILDERS, build_dashboard
from workbench.app.offline_styles import keep_styles_local


@pytest.fixture
def session_doc(monkeypatch):
    """A document as a served session's (it knows where Panel's stylesheets are served), made
    current; Panel's own rendering is restored afterwards."""
    monkeypatch.setattr(Reactive, "_get_properties", Reactive._get_properties)
    doc = Document()
    doc._template_variables["dist_url"] = get_dist_path()
    with set_curdoc(doc):
        yield doc


def _style_urls(doc: Document, *detached) -> set[str]:
    """The addresses of every stylesheet in ``doc`` and under the ``detached`` models."""
    models = set(doc.models)
    for model in detached:
        models |= model.references()
    return {m.url for m in models if isinstance(m, ImportedStyleSheet)}


def _hidden_alert(doc: Document) -> tuple[pn.pane.Alert, object]:
    """An alert on the second of two dynamic tabs, shown once, then hidden: its model is out
    of the document; the alert and its model."""
    alert = pn.pane.Alert("running")
    tabs = pn.Tabs(("first", pn.pane.Markdown("first")), ("second", alert), dynamic=True)
    root = tabs.get_root(doc)
    doc.add_root(root)
    tabs.active = 1
    tabs.active = 0
    model = alert._models[root.ref["id"]][0]
    assert model.document is None
    return alert, model


def test_without_it_a_pane_changed_on_a_hidden_tab_sends_the_page_to_the_cdn(session_doc):
    alert, model = _hidden_alert(session_doc)
    alert.object = "finished"
    urls = _style_urls(session_doc, model)
    assert f"{CDN_DIST}css/alerts.css?v={pn.__version__}" in urls
    assert f"{CDN_DIST}css/loading.css?v={pn.__version__}" in _style_urls(session_doc)


def test_with_it_a_pane_changed_on_a_hidden_tab_keeps_every_style_local(session_doc):
    keep_styles_local()
    installed = Reactive._get_properties
    keep_styles_local()
    assert Reactive._get_properties is installed  # once, not wrapped twice
    alert, model = _hidden_alert(session_doc)
    alert.object = "finished"
    assert "finished" in model.text  # the change reached the hidden model
    urls = _style_urls(session_doc, model)
    assert urls and not any(url.startswith(CDN_DIST) for url in urls), urls


def test_a_multiway_run_ending_on_its_hidden_tab_keeps_the_dashboards_styles_local(
    session_doc,
):
    """The dashboard's case: a run ends (its status and measures change) after its user left
    the tab, which the page keeps (its models stay in the session's document)."""
    keep_styles_local()
    page = build_dashboard()
    root = pn.panel(page).get_root(session_doc)
    session_doc.add_root(root)
    multiway = list(TAB_BUILDERS).index("Multi-way join")
    page.switcher.active = multiway
    wjoin = page.tabs["Multi-way join"]
    page.switcher.active = 0
    wjoin.model.param.update(running=True)
    results, message = wjoin.model.compute()
    wjoin.model.param.update(results=results, message=message, running=False)
    kept = [m for m, _ in wjoin.status_pane._models.values()]
    assert kept and all(m.document is session_doc for m in kept)  # the tab stays in the page
    assert all(message in m.text for m in kept)
    urls = _style_urls(session_doc, *kept)
    assert urls and not any(url.startswith(CDN_DIST) for url in urls), urls
