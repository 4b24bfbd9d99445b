"""The Coalescing and Multi-way join tabs as a newcomer meets them (issue 13): after Run the
three result plots have real sizes and the run's data, response times read in three
significant digits, cp reads the same in the readout and the table, groups are in numeric order,
and every plot follows its data after each change.

Server-side: each tab's plots are Bokeh figures; changing the app's parameters updates those
figures in place, as in a served page.
"""

from __future__ import annotations

import asyncio
import re

import numpy as np
import panel as pn
import pytest
from bokeh.models import CustomJSTickFormatter

from tests.support.plot_checks import uncovered
from workbench.app import CoalescingExplorer, WJoinExplorer
from workbench.app.coalescing_model import CoalescingModel
from workbench.app.panes import concept
from workbench.app.wjoin import response_ms
from workbench.app.wjoin_model import WJoinModel
from workbench.experiments.atomic_costs import ATOMIC
from workbench.viz.wjoin import significant


def _figures(app: pn.viewable.Viewer) -> tuple[list[pn.pane.Bokeh], list]:
    """The app's plot panes in page order, and the Bokeh figure of each (redrawn in place)."""
    panes = pn.panel(app).select(pn.pane.Bokeh)
    return panes, [pane.object for pane in panes]


def _data(figure: object, glyph: str) -> dict:
    """The data of the figure's first renderer drawing ``glyph`` (a Bokeh glyph class name)."""
    (source, *_) = [r.data_source.data for r in figure.renderers if type(r.glyph).__name__ == glyph]
    return source


# -- Multi-way join ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wjoin():
    """A multi-way join tab over two hours of data, its panes rendered, before any run."""
    app = WJoinExplorer(WJoinModel(hours=2.0))
    panes, figures = _figures(app)
    return app, panes, figures


def test_a_multiway_run_fills_three_sized_plots_with_its_measures(wjoin):
    app, panes, figures = wjoin
    assert "Constraints: uniform clique" in app.graph_drawing()
    assert [f.title.text for f in figures] == [
        "throughput (tuples/s)",
        "mean response time (ms)",
        "Results emitted over stream time",
    ]
    assert all(isinstance(p, pn.pane.Bokeh) for p in panes)  # figures redrawn in place
    for pane, figure in zip(panes, figures, strict=True):
        assert pane.height >= 250 and pane.sizing_mode == "stretch_width"
        assert figure.height >= 250 and figure.sizing_mode == "stretch_width"
    before = [_data(f, "Text")["text"] for f in figures[:2]]
    assert before == [["not run yet"] * 2] * 2
    assert app.status_pane.alert_type == "info" and "Press **Run**" in app.status_pane.object

    bew, few = app.model.run()
    assert app.model.message.startswith(f"{bew.tuples:,} tuples from 3 motes")
    assert app.status_pane.alert_type == "success" and app.status_pane.object == app.model.message
    frame = app.model.measures()
    assert frame["algorithm"].tolist() == ["BEW", "FEW"] and frame["results"].dtype.kind == "i"
    assert app.results_table.value.equals(frame)
    assert [p.object for p in panes] == figures  # the same figures, with the run's data
    throughput = _data(figures[0], "Quad")
    assert list(throughput["top"]) == frame["tuples/s"].tolist()
    assert all(t.endswith(" ms") for t in _data(figures[1], "Text")["text"])
    assert list(_data(figures[1], "Quad")["top"]) == frame["mean response (ms)"].tolist()
    curves = _data(figures[2], "MultiLine")  # a step line per algorithm that ran: BEW, FEW
    assert curves["curve"] == ["BEW", "FEW"]
    assert [max(ys) for ys in curves["ys"]] == [bew.results, few.results]  # cumulative
    assert np.all(np.diff(curves["xs"][1]) >= 0)
    for figure in figures:
        assert not uncovered(figure), figure.title.text
    assert isinstance(figures[2].xaxis[0].formatter, CustomJSTickFormatter)  # readable times


def test_response_times_read_in_three_significant_digits(wjoin):
    app, _, figures = wjoin
    if not app.model.results:
        app.model.run()
    frame = app.model.measures()
    for column in ("tuples/s", "mean response (ms)", "p95 response (ms)"):
        assert all(significant(v) == v for v in frame[column]), column
    labels = _data(figures[1], "Text")["text"]
    for text, value in zip(labels, frame["mean response (ms)"], strict=True):
        digits = re.sub(r"[^0-9]", "", text.removesuffix(" ms")).lstrip("0")
        assert len(digits.rstrip("0")) <= 3 and float(text[:-3].replace(",", "")) == value
    shown = app.results_table.formats
    assert shown["mean response (ms)"] is shown["p95 response (ms)"] is response_ms
    assert shown["tuples/s"](12345.6) == "12,346"
    assert shown["visited outside"](12345) == shown["peak buffered"](12345) == "12,345"


def test_the_mechanism_switch_reruns_and_the_table_spins_while_running(wjoin):
    """The fast / paper selector beside the algorithms: a move makes the run stale; the
    measures table shows a spinner while a run is in progress."""
    app, _, _ = wjoin
    app.model.run()
    app.model.mechanism = "paper"
    assert app.status_pane.alert_type == "warning" and "Mechanism" in app.status_pane.object
    table = app.results_table.__panel__()
    app.model.running = True
    assert table.loading
    app.model.running = False
    assert not table.loading
    app.model.mechanism = "fast"


def test_multiway_plots_follow_each_change(wjoin):
    app, _, figures = wjoin
    changes = [
        {"algorithms": ["FEW"]},
        {"motes": [1, 2, 3, 4], "algorithms": ["BEW", "FEW"]},
        {"graph": "path", "window": 300.0},
        {"graph": "star", "quantum": 2.0},
        {"hours": 1.0},
    ]
    for change in changes:
        app.model.param.update(**change)
        app.model.run()
        assert app.model.results, (change, app.model.message)
        names = figures[0].xaxis[0].major_label_overrides
        assert [names[k] for k in sorted(names)] == app.model.algorithms, change
        assert app.graph_drawing().count("<circle") == len(app.model.motes), change
        for figure in figures:
            assert not uncovered(figure), (change, figure.title.text)
    app.model.motes = [1]  # cannot run: said in the page, plots keep their structure
    assert app.model.run() == [] and app.status_pane.alert_type == "danger"
    assert "2 to 6 motes" in app.status_pane.object and "Choose 2 to 6 motes" in app.graph_drawing()
    app.model.param.update(motes=[1, 2, 3], algorithms=[])
    assert app.model.run() == [] and "choose BEW, FEW or both" in app.status_pane.object


def test_a_run_in_a_worker_thread_sets_its_outcome_on_the_loop():
    app = WJoinExplorer(WJoinModel(hours=1.0))
    seen = []
    app.model.param.watch(lambda e: seen.append(e.new), "running")
    asyncio.run(app.run_async())
    assert (
        seen == [True, False] and len(app.model.results) == 2 and "tuples from" in app.model.message
    )


# -- Coalescing --------------------------------------------------------------------------------


def _readout_numbers(text: str) -> dict[str, str]:
    """The readout's cp and oop, now and at the last re-evaluation, as printed."""
    out = {}
    for name in ("cp", "oop"):
        line = next(line for line in text.split("\n\n") if line.startswith(f"**{name}**"))
        found = re.search(r"now \*\*([0-9.]+)\*\* · at the last re-evaluation \*\*([0-9.]+)", line)
        out[f"{name} now"], out[f"{name} then"] = found.groups()
    return out


def test_cp_reads_the_same_in_the_readout_and_the_table():
    app = CoalescingExplorer()
    for _ in range(3):
        numbers = _readout_numbers(app.readout_pane.object)
        assert all(re.fullmatch(r"\d\.\d{3}", v) for v in numbers.values()), numbers
        cp, oop = app.model.cp_oop()
        assert numbers["cp now"] == f"{cp:.3f}" and numbers["oop now"] == f"{oop:.3f}"
        table = app.query_table.value.set_index("query")
        row = table.loc[app.model.query().name]
        assert numbers["cp then"] == f"{row['cp']:.3f}"
        assert numbers["oop then"] == f"{row['oop']:.3f}"
        app.model.step(450)
    html = app.query_table.html()
    assert '<th class="number">cp (last re-evaluation)</th>' in html
    cp = app.query_table.value["cp"].iloc[0]
    assert f'<td class="number">{cp:.3f}</td>' in html  # 0.87 reads 0.870
    points = app.eager_surface().layers["queries"]
    assert points.style["legend_field"] == "served"  # the legend names the serving schemes
    table = app.model.selection()
    assert list(points.columns["query"]) == table["query"].tolist()
    assert list(points.columns["served"]) == [f"query served {k}" for k in table["scheme"]]


def test_the_extent_lists_motes_in_numeric_order():
    app = CoalescingExplorer(CoalescingModel(motes=[10, 3, 1, 2, 4, 6]))
    (_, *_), figures = _figures(app)
    timeline = figures[0]

    def rows() -> list[int]:  # the motes' labels, top to bottom
        labels = timeline.yaxis[0].major_label_overrides
        assert sorted(labels) == sorted(timeline.yaxis[0].ticker.ticks)
        return [int(labels[tick]) for tick in sorted(labels, reverse=True)]

    assert rows() == [1, 2, 3, 4, 6, 10]
    assert isinstance(timeline.xaxis[0].formatter, CustomJSTickFormatter)
    assert "(ms)" not in timeline.xaxis[0].axis_label and "(s" not in timeline.xaxis[0].axis_label
    app.model.motes = [12, 2, 11]
    assert rows() == [2, 11, 12]
    assert not uncovered(timeline)


def test_coalescing_plots_follow_each_change():
    app = CoalescingExplorer()
    _, figures = _figures(app)
    assert len(figures) == 3  # the extent and the two cost surfaces
    changes = [
        lambda: app.model.step(300),
        lambda: setattr(app.model, "scheme", "lazy"),
        lambda: setattr(app.model, "w_update", 100.0),
        lambda: setattr(app.model, "c_split", 20.0),
        lambda: setattr(app.model, "atomic_source", "measured"),
        lambda: setattr(app.model, "motes", [1, 2]),
        lambda: setattr(app.model, "window_minutes", 10.0),
        lambda: setattr(app.model, "equivalence", "equal"),
        lambda: app.model.param.update(window_kind="tuples", window_tuples=200),
        lambda: setattr(app.model, "scheme", "eager"),
    ]
    for k, change in enumerate(changes):
        change()
        for figure in figures:
            assert not uncovered(figure), (k, figure.title.text)
    drawn = _data(figures[0], "Segment")
    assert set(drawn["group"]) == {"1", "2"} and len(drawn["x0"]) == len(app.model.extent())


def test_the_atomic_costs_card_edits_the_custom_costs():
    """Table 4's costs in a card, made when it is first opened: a number input per atomic
    cost, editable while the costs are custom, disabled while they are measured; an edit
    redraws the surfaces."""
    app = CoalescingExplorer()
    view = pn.panel(app)
    (card,) = (c for c in view.select(pn.Card) if c.title == "atomic costs (Table 4)")
    assert card.collapsed and not card.objects
    card.collapsed = False
    inputs = card.select(pn.widgets.FloatInput)
    assert [i.label for i in inputs] == [f"C_{name}" for name in ATOMIC]
    assert not any(i.disabled for i in inputs)
    before = app.eager_surface().layers["surface"].columns["image"][0]
    (split,) = (i for i in inputs if i.label == "C_split")
    split.value = 25.0
    assert app.model.c_split == 25.0
    after = app.eager_surface().layers["surface"].columns["image"][0]
    assert (after >= before).all() and (after > before).any()
    app.model.atomic_source = "measured"
    assert all(i.disabled for i in inputs)


@pytest.mark.parametrize("app", [CoalescingExplorer, WJoinExplorer])
def test_each_tab_opens_with_plain_words_and_its_concept(app):
    view = pn.panel(app())
    intro, box = view.select(pn.pane.Markdown)[0].object.split("\n\n<details", 1)
    assert 2 <= intro.count(". ") + 1 <= 4 and "Run" in intro
    title = re.search(r"<summary>(.*?)</summary>", box)[1]
    assert title.startswith(
        "Concept: Coalescing" if app is CoalescingExplorer else "Concept: Multi-way window joins"
    )
    text = concept(title.removeprefix("Concept: ").split(" (")[0])
    assert text in box and not text.startswith("See the docs")  # opened in the browser
    assert title.endswith("(docs › Concepts)")


def test_a_new_configuration_shows_only_the_refilled_extents():
    """Reconfiguring replays the latest readings into fresh extents; the page sees one update,
    with them filled (never the empty extents at an earlier position)."""
    app = CoalescingExplorer()
    app.model.step()
    seen = []
    app.model.param.watch(
        lambda e: seen.append((e.new, app.model.eager.counters.events_in)), "position"
    )
    before = app.model.position
    app.model.window_minutes = 65.0
    assert app.model.position == before and app.model.eager.stored > 0
    assert all(position == before and arrived > 0 for position, arrived in seen)
