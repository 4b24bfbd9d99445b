"""The explorer tabs as a newcomer meets them (issue 13): plots follow their data after every
parameter change, every mark is explained, labels do not overprint, counts say what they count.

Server-side: each tab's HoloViews panes are rendered to Bokeh once; changing the app's
parameters then updates those figures in place, as in a served page.
"""

from __future__ import annotations

import re
from itertools import combinations

import numpy as np
import pandas as pd
import panel as pn
import pytest

from tests.support.plot_checks import rendered, uncovered
from workbench.app import (
    DeploymentExplorer,
    PartitionRegions,
    PTJoinExplorer,
    TemplateEditor,
    dashboard_tabs,
)
from workbench.app.ptjoin_model import PTJoinModel
from workbench.data.streams import default_readings
from workbench.viz.figures import View

LABEL_GAP = 0.05
"""Labels closer than this fraction of the x range must sit at different heights."""


def _figures(app: pn.viewable.Viewer) -> list:
    """The Bokeh figure of every plot of the app's tab (HoloViews or Bokeh pane), in page
    order."""
    panes = pn.panel(app).select(lambda p: isinstance(p, (pn.pane.HoloViews, pn.pane.Bokeh)))
    return [
        figure
        for pane in panes
        for figure in (rendered(pane) if isinstance(pane, pn.pane.HoloViews) else [pane.object])
    ]


def _labels(view: View, column: str) -> pd.DataFrame:
    """The label texts of the view's layer ``column``, with their x and y."""
    return pd.DataFrame(dict(view.layers[column].columns))


def _assert_apart(frame: pd.DataFrame, column: str, span: float) -> None:
    """Labels whose x are closer than LABEL_GAP of the range sit at different heights."""
    for (_, a), (_, b) in combinations(frame.iterrows(), 2):
        if abs(a["x"] - b["x"]) < LABEL_GAP * span:
            assert a["y"] != b["y"], f"{a[column]} and {b[column]} overprint"


def _legend(figure: object) -> list[str]:
    """The entries of the figure's legends as the browser draws them: an item's own label, or
    each value of its field, in the order of the rows."""
    entries: list[str] = []
    for legend in figure.legend:
        for item in legend.items:
            if hasattr(item.label, "value"):
                entries.append(item.label.value)
            else:
                rows = item.renderers[0].data_source.data[item.label.field]
                entries.extend(dict.fromkeys(str(r) for r in rows))
    return entries


def _concept(page: pn.viewable.Viewable) -> str:
    """The title of the tab's concept box (:func:`~workbench.app.panes.intro`)."""
    (intro,) = page.select(
        lambda p: isinstance(p, pn.pane.Markdown) and "tab-intro" in p.css_classes
    )
    return re.search(r"<summary>(.*?)</summary>", intro.object)[1]


def _time_axis(figure: object) -> bool:
    return type(figure.xaxis[0].formatter).__name__ == "CustomJSTickFormatter"


def test_every_plot_draws_on_a_canvas():
    """No tab asks the browser for WebGL (emulated in software without a GPU, and each
    plot's copy onto the page cost about 1 s of a tab switch in headless Chromium)."""
    from bokeh.document import Document
    from bokeh.models import Plot

    for name, app in dashboard_tabs():
        root = pn.panel(app).get_root(Document())
        backends = {p.output_backend for p in root.select({"type": Plot})}
        assert backends <= {"canvas"}, f"{name}: {backends}"


ZOOMED = {  # the plots of these tabs a user zooms (their toolbars), by title's start
    "Templates": ("Adjusted histograms",),
    "Satisfaction probability": ("Satisfaction probability",),
    "Partition regions": ("Partition regions",),
    "Timing joins": ("Results over",),
    "Deployment (simulated)": ("Mote ",),
}


@pytest.mark.parametrize("tab", list(ZOOMED))
def test_a_tabs_figures_share_their_stateless_parts_and_zoom_only_where_it_helps(tab):
    """Issue 51: the figures of a tab share one row filter, selection policy, label policy
    and scale (:func:`~workbench.viz.figures.share_parts`); a plot nobody zooms has no tools
    but its hover and shows no toolbar."""
    from bokeh.document import Document
    from bokeh.models import AllIndices, AllLabels, HoverTool, LinearScale, Plot, UnionRenderers

    doc = Document()
    pn.panel(dict(dashboard_tabs())[tab]).server_doc(doc)
    kinds = [type(m) for m in doc.models]
    for shared in (AllIndices, UnionRenderers, AllLabels, LinearScale):
        assert kinds.count(shared) == 1, f"{tab}: {shared.__name__}"
    for plot in (m for m in doc.models if isinstance(m, Plot)):
        zoomed = plot.title.text.startswith(ZOOMED[tab])
        idle = [t for t in plot.toolbar.tools if not isinstance(t, HoverTool)]
        assert bool(idle) == zoomed and (plot.toolbar_location is None) != zoomed, plot.title.text


def test_hovering_a_template_bar_names_it_the_picked_one_first():
    """One renderer draws every template's bars; the hover shows one bar, the picked
    template's where it is under the pointer (Definition 4's offsets)."""
    from bokeh.models import HoverTool

    ed = TemplateEditor()
    (hover,) = ed.template_figure("A").select({"type": HoverTool})
    assert hover.limit == 1 and hover.sort_by == [("picked", "descending")]
    assert ("template", "phi_@template") in hover.tooltips


# -- Satisfaction probability ------------------------------------------------------------------


@pytest.fixture
def linked() -> tuple[TemplateEditor, PTJoinExplorer]:
    """The dashboard's Templates and Satisfaction probability tabs (linked streams)."""
    tabs = dict(dashboard_tabs())
    return tabs["Templates"], tabs["Satisfaction probability"]


def test_satisfaction_plot_follows_every_parameter(linked):
    editor, app = linked
    (figure,) = _figures(app)
    assert not uncovered(figure) and _time_axis(figure)
    steps = [
        {"d": 13_143.0},
        {"d": 5_643.0},
        {"delta": 0.55},
        {"pi": 4_000.0},
        {"t_det": 15_000.0},
        {"template": 20},
        {"model": "intervals"},
        {"d": 200.0},  # below pi: the loose fallback
        {"model": "histograms", "d": 3_000.0},
    ]
    for change in steps:
        app.param.update(**change)
        xs, _ = app.curves()
        assert not uncovered(figure), change
        assert (figure.x_range.start, figure.x_range.end) == pytest.approx((xs[0], xs[-1]))
        # the Reset tool returns to the current data's range, not the first frame's
        assert (figure.x_range.reset_start, figure.x_range.reset_end) == pytest.approx(
            (xs[0], xs[-1])
        )
    editor.source = "PTJoin Example 3"  # new streams: templates 40 ms long
    app.d = 60.0
    xs, _ = app.curves()
    assert not uncovered(figure) and app.pi == 40.0
    assert (figure.x_range.start, figure.x_range.end) == pytest.approx((xs[0], xs[-1]))
    assert xs[-1] - xs[0] < 1_000


@pytest.mark.parametrize("cls", [PTJoinExplorer, PartitionRegions])
def test_a_delta_move_redraws_the_plot_once(cls, monkeypatch):
    """delta reaches the plot through the stime table it rebuilds: one redraw, not two."""
    app = cls(d=8_000.0)
    name = "curve_view" if cls is PTJoinExplorer else "regions_view"
    drawn = getattr(app, name)
    calls = []
    monkeypatch.setattr(app, name, lambda: calls.append(1) or drawn())
    (figure,) = _figures(app)
    calls.clear()
    app.delta = 0.6
    assert len(calls) == 1
    assert figure.select_one({"name": "delta"}).data["y"] == [0.6]


@pytest.mark.parametrize("d", [13_143.0, 5_643.0, 3_000.0])
def test_satisfaction_curves_show_both_tails(linked, d):
    _, app = linked
    app.d = d
    xs, probs = app.curves()
    upper = probs.max(axis=0)
    assert np.all(probs[:, 0] == 0) and np.all(probs[:, -1] == 0)  # from 0 ...
    assert upper.max() >= app.delta  # ... up past delta ...
    rise, fall = np.argmax(upper > 0), len(xs) - 1 - np.argmax(upper[::-1] > 0)
    assert 0 < rise < np.argmax(upper) <= fall < len(xs) - 1  # ... and back to 0
    marks = app.markers()
    assert xs[0] < marks["LH"] <= marks["LL"] < marks["RL"] <= marks["RH"] < xs[-1]
    # the rise and the fall are resolved: several points between LH and LL
    assert np.count_nonzero((xs >= marks["LH"]) & (xs <= marks["LL"])) >= 5


def test_satisfaction_curves_are_computed_once_for_every_session():
    """Two sessions on the same templates and parameters share one read-only grid."""
    first, second = (dict(dashboard_tabs())["Satisfaction probability"] for _ in range(2))
    _, mine = first.curves()
    _, theirs = second.curves()
    assert theirs is mine and not mine.flags.writeable
    second.d += 100.0  # another input: a grid of its own
    assert second.curves()[1] is not mine


def test_satisfaction_title_legend_and_intro():
    app = PTJoinExplorer(d=60.0)
    title = app.curve_view().title
    assert title.startswith("Satisfaction probability") and "partitions" not in title
    key = app.legend().object
    for mark in (
        "SR",
        "LPR, RPR",
        "VR",
        "partner template",
        "upper envelope",
        "lower envelope",
        "delta",
        "LH, LL, RL, RH",
        "Left or Right",
        "(1), (4), (5), (8)",
    ):
        assert mark in key, mark
    page = pn.panel(app)
    assert _concept(page).startswith("Concept: Satisfaction probability")
    assert "pi (the length of the longest partner template)" in page.select(pn.pane.Markdown)[
        0
    ].object.replace("\n", " ")


@pytest.mark.parametrize("d", [13_143.0, 3_000.0, 200.0])
def test_satisfaction_marker_labels_do_not_overprint(linked, d):
    _, app = linked
    app.d = d
    xs, _ = app.curves()
    view = app.curve_view()
    marks = _labels(view, "marker")
    loose = _labels(view, "loose")
    assert list(marks["marker"]) == ["LH", "LL", "RL", "RH"]
    _assert_apart(marks, "marker", xs[-1] - xs[0])
    _assert_apart(loose, "loose", xs[-1] - xs[0])
    assert marks["y"].min() > loose["y"].max() + 0.5  # the two label rows: top and bottom
    if d == 13_143.0:  # LH-LL and RL-RH lie a few hundred ms apart on a 36 s axis
        assert marks["y"].nunique() == 2


def test_satisfaction_summary_has_sensible_precision():
    app = PTJoinModel()
    text = app.summary()
    assert "exact, Theorem 3" in text
    numbers = [t for t in text.replace("|", " ").split() if "." in t and t[0].isdigit()]
    assert numbers and all(len(n.split(".")[1].rstrip("*")) <= 1 for n in numbers)


# -- Templates --------------------------------------------------------------------------------


def test_template_plots_follow_every_parameter():
    ed = TemplateEditor()
    figures = _figures(ed)
    assert len(figures) == 3 and all(_time_axis(f) for f in figures)
    steps = [
        lambda: ed.param.update(stream="B", picked=3),
        lambda: ed.param.update(pair_u=5, pair_v=7, offset=-3_000.0),
        lambda: ed.param.update(count=6, n_buckets=4, max_length=15_000.0, seed=3),
        lambda: ed.generate(ed),  # templates ten times as long as the learned ones
        lambda: ed.param.update(picked=5, pair_u=2),
        lambda: ed.param.update(source="PTJoin Example 3"),  # 40 ms templates
        lambda: ed.param.update(source="random (Example 5)"),
    ]
    for step in steps:
        step()
        for figure in figures:
            assert not uncovered(figure), figure.title.text
    bars_a = figures[0]
    assert bars_a.x_range.end - bars_a.x_range.start > 0.5 * ed.stream_a.pi


def test_template_counts_say_what_they_count():
    ed = TemplateEditor()
    assert ed.param.count.label == "templates each" and ed.count == 20  # under "Generate"
    shown = ed.shown()
    assert "stream A **27** templates" in shown and "stream B **27** templates" in shown
    ed.param.update(count=5, max_length=100.0)
    ed.generate(ed)
    shown = ed.shown()
    assert "stream A **5** templates" in shown and "(pi = " in shown
    assert ed.source == "random (Example 5)"  # the source says where they came from
    (bars_a, *_) = _figures(ed)
    assert "5 templates" in bars_a.title.text


def test_template_legends_and_intro():
    ed = TemplateEditor()
    bars, _, adjusted = _figures(ed)
    items = [_legend(f) for f in (bars, adjusted)]
    assert items[0] == ["other templates", "picked template"]
    assert [i.split(",")[0] for i in items[1]] == ["H_i~", "H_j~"]
    assert "shared bucket edges" in items[1][0]
    page = pn.panel(ed)
    assert _concept(page).startswith("Concept: Histogram timestamps")
    assert "adjusted histograms" in page.select(pn.pane.Markdown)[0].object


# -- Partition regions -------------------------------------------------------------------------


def test_regions_plot_follows_every_parameter():
    app = PartitionRegions(d=8_000.0)
    (figure,) = _figures(app)
    assert _time_axis(figure)
    steps = [
        {"base": 100},
        {"base": len(app.a_time) - 1},
        {"delta": 0.5},
        {"d": 20_000.0},
        {"max_delay": 10_000.0},
        {"d": 500.0},  # below pi: the loose partitions
        {"base": 2_000, "d": 8_000.0},
    ]
    for change in steps:
        app.param.update(**change)
        xs, _, lo, hi = app.nearby()
        assert len(xs) > 0, change  # partners shown: the plot is not empty
        assert not uncovered(figure), change
        assert (figure.x_range.start, figure.x_range.end) == pytest.approx((lo, hi))
        assert f"a_{app.base} " in figure.title.text


def test_regions_labels_legend_and_obsolete_wording():
    app = PartitionRegions(d=8_000.0)
    _, _, lo, hi = app.nearby()
    bounds = _labels(app.regions_view(), "bound")
    assert list(bounds["bound"])[:1] == ["obsolete <"]
    _assert_apart(bounds, "bound", hi - lo)
    text = app.summary()
    vr = text.index("| VR (none join) |")
    assert text.index("of which obsolete") > vr  # obsolete partners are part of VR
    assert "e+" not in text and " ms" not in text.split("\n")[0]  # clock times, not 1.07e+7 ms
    key = app.legend().object
    for mark in ("SR", "LPR, RPR", "VR", "partner event", "base event", "delta", "obsolete <"):
        assert mark in key, mark
    page = pn.panel(app)
    assert _concept(page).startswith("Concept: Partition regions")


# -- Deployment --------------------------------------------------------------------------------


def test_deployment_plots_follow_every_parameter():
    app = DeploymentExplorer(readings=default_readings())
    mote_map, extent = _figures(app)
    assert not uncovered(mote_map)
    steps = [
        {"window_hours": 14.0},
        {"mote": 7},
        {"quantum": 2.0},
        {"window_hours": 1.5},
        {"window_hours": 24.0, "mote": 30},
    ]
    for change in steps:
        app.param.update(**change)
        assert not uncovered(extent), change
        start, end = pd.Timestamp(extent.x_range.start), pd.Timestamp(extent.x_range.end)
        assert (end - start) / pd.Timedelta(hours=1) == pytest.approx(app.window_hours)
        assert f"last {app.window_hours:g} h" in extent.title.text


def test_deployment_legend_and_intro():
    app = DeploymentExplorer(readings=default_readings())
    mote_map, extent = _figures(app)
    labels = _legend(extent)
    assert labels == ["readings", "coalesced tuples"]
    page = pn.panel(app)
    assert _concept(page).startswith("Concept: Deployment")
    colorbars = [r for r in mote_map.right if type(r).__name__ == "ColorBar"]
    assert colorbars and colorbars[0].title == "mean temperature (C)"
    palette = colorbars[0].color_mapper.palette  # cool to warm: the warmest mote is red
    assert palette[0].startswith("#0") and palette[-1].startswith("#6")


# -- Whole month -------------------------------------------------------------------------------


def test_month_view_rejoins_on_every_move_and_keeps_a_history():
    from workbench.app.month import MonthExplorer
    from workbench.data.replica import simulate_deployment
    from workbench.data.streams import replayed_streams

    streams = replayed_streams(simulate_deployment(days=0.2, seed=0), days=None)
    app = MonthExplorer(streams=streams)
    first = app.rejoin()
    assert "pairs joined" in app.message and f"{len(first.pairs):,}" in app.message
    app.delta = 0.6
    looser = app.last
    app.d = 6000.0
    wider = app.last
    assert len(first.pairs) <= len(looser.pairs) <= len(wider.pairs)
    assert app.history.value["pairs"].tolist() == [
        len(wider.pairs),
        len(looser.pairs),
        len(first.pairs),
    ]
    assert int(wider.per_hour.sum()) == len(wider.pairs)
    area = app.per_hour_view().layers["pairs per hour"]
    assert area.glyph == "varea" and int(area.columns["y"].sum()) == len(wider.pairs)
    page = pn.panel(app)
    assert _concept(page).startswith("Concept: Whole month")
    (fig,) = [p.object for p in page.select(pn.pane.Bokeh) if p.object.renderers]
    app.d = 1000.0  # the chart follows the re-join in place
    assert int(sum(fig.renderers[0].data_source.data["y"])) == len(app.last.pairs)
    assert fig.title.text == "Pairs per hour, delta = 0.6, d = 1000 ms"
    assert fig.y_range.end >= max(app.last.per_hour)


def test_month_view_before_its_first_join_is_an_empty_chart_that_says_so():
    from workbench.app.month import MonthExplorer

    view = MonthExplorer().per_hour_view()
    assert view.title.startswith("Join the whole month")
    assert len(view.layers["pairs per hour"].columns["x"]) == 0
    assert view.y_range == (0.0, 1.0)
