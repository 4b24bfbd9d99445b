"""Each dashboard tab's Bokeh models against its budget (issue 51): a tab's first opening costs
the server and the browser about in proportion to its models (built, walked after each change
of the document, serialized, laid out), so a tab that grows past its budget fails here, not
silently in the rooms of ``./dev bench room``."""

from __future__ import annotations

import panel as pn
import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc

from workbench.app.dashboard import TAB_BUILDERS, DashboardTabs

TAB_MODEL_BUDGETS = {
    "Templates": 98,
    "Satisfaction probability": 75,
    "Partition regions": 69,
    "Timing joins": 87,
    "Live join (Spark)": 100,
    "Coalescing": 120,
    "Multi-way join": 99,
    "Deployment (simulated)": 84,
    "Whole month": 50,
}
"""The most Bokeh models each tab may hold at its first opening (``pn.panel(tab).get_root``
into a document of its own): what each held on 2026-11-28 after issue 51's levers (median 87;
the tabs held 55-272 before, the floor page's about 25).  Lower a budget when a tab shrinks;
raise one only with the rooms' figures (``./dev bench room --clients protocol --floor``) that
show what the growth costs."""


@pytest.fixture(scope="module")
def tabs() -> DashboardTabs:
    return DashboardTabs()


def models_of(tab: pn.viewable.Viewer) -> int:
    """The Bokeh models ``tab`` puts into a document of its own."""
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(tab).get_root(doc))
    return len(doc.models)


def test_every_tab_has_a_budget():
    assert list(TAB_MODEL_BUDGETS) == list(TAB_BUILDERS)


@pytest.mark.parametrize("name", list(TAB_BUILDERS))
def test_a_tab_holds_no_more_models_than_its_budget(tabs, name):
    count = models_of(tabs[name])
    assert count <= TAB_MODEL_BUDGETS[name], (
        f"{name}: {count} Bokeh models, budget {TAB_MODEL_BUDGETS[name]}"
    )
