"""The PTJoin explorer's and the template editor's models (no Panel object made) and their
pages' wiring, without a browser."""

from __future__ import annotations

import numpy as np
import panel as pn
import pytest

from workbench.app import PTJoinExplorer
from workbench.app.ptjoin_model import PTJoinModel
from workbench.app.templates_model import TemplatesModel
from workbench.partitions import Region
from workbench.probability import band_prob
from workbench.templates import random_templates
from workbench.viz.coalesce import extent_figure
from workbench.viz.figures import View, view_figure


def test_defaults_are_the_papers_example():
    app = PTJoinModel()
    assert app.table.delta == 0.8 and app.fast_path
    parts = app.partitions()
    assert set(parts) == {"loose", "tight"}
    tight = parts["tight"]
    # the tight ranges lie inside the loose ones (Theorem 3 vs Eq. 4-6)
    assert parts["loose"].lpr_lo <= tight.lpr_lo and tight.rpr_hi <= parts["loose"].rpr_hi


def test_steering_delta_rebuilds_the_tables_and_moves_the_partitions():
    app = PTJoinModel()
    before = app.partitions()["tight"]
    app.delta = 0.5
    assert app.table.delta == 0.5
    after = app.partitions()["tight"]
    assert after.lpr_hi < before.lpr_hi and after.rpr_lo > before.rpr_lo  # lower bar, wider SR


def test_small_window_falls_back_to_the_loose_partitions():
    model = PTJoinModel(d=20.0)
    assert not model.fast_path and set(model.partitions()) == {"loose"}
    assert "Eq. 4-6" in model.title() and "loose fallback" in model.summary()
    assert PTJoinExplorer(d=20.0).curve_view().title == model.title()


def test_plotted_regions_agree_with_the_exact_probability():
    rng = np.random.default_rng(0)
    a = random_templates(rng, 3, 5, 200, name="A")
    b = random_templates(rng, 4, 5, 300, name="B")
    app = PTJoinExplorer(stream_a=a, stream_b=b, d=350.0, t_det=1000.0, delta=0.7)
    p = app.partitions()["tight"]
    hi = a.event(0, 1000.0)
    curves = app.curve_view().layers["curves"].columns
    for name in ("upper envelope", "lower envelope"):
        k = curves["curve"].index(name)
        xs, ys = curves["xs"][k], curves["ys"][k]
        regions = p.classify(xs)
        assert np.all(ys[regions == Region.SR] >= 0.7 - 1e-9)
        assert np.all(ys[regions == Region.VR] < 0.7 + 1e-9)
    assert band_prob(hi, b.event(0, p.lpr_hi + 1), 350.0) >= 0.7


def test_the_page_renders_to_bokeh_models():
    app = PTJoinExplorer()
    root = pn.panel(app).get_root()
    assert root is not None
    assert view_figure(app.curve_view(), "x", "y").select_one({"name": "marker"}) is not None


def test_template_index_is_bounded_by_the_stream():
    app = PTJoinModel()
    with pytest.raises(ValueError):
        app.template = 5
    app.stream_a = random_templates(np.random.default_rng(1), 7, name="A")
    app.template = 6
    assert app.partitions()["loose"].lpr_lo < app.t_det


def test_deployment_explorer_on_the_simulated_default():
    from workbench.app import DeploymentExplorer

    app = DeploymentExplorer()
    assert app.source.startswith("simulated")
    eager, lazy, _ = app.extents()
    assert len(lazy) > eager.stored > 0
    app.quantum = 2.0
    coarser, _, _ = app.extents()
    assert coarser.stored < eager.stored
    assert "same view: yes" in app.summary()
    view = app.extent_view()
    assert len(view.layers["coalesced"].columns["x0"]) == coarser.stored
    assert app.map_figure().select_one({"name": "motes"}) is not None
    assert pn.panel(app).get_root() is not None
    fills = []
    app._fill_extents = lambda own=app._fill_extents: fills.append(1) or own()
    app.quantum = 1.0  # the plot and the summary follow: the extents are filled once
    app.extent_view(), app.summary()
    assert len(fills) == 1 and app.extents()[0].stored < eager.stored


# -- the dashboard's tabs ----------------------------------------------------------------------


def _markers(view: View) -> dict[str, float]:
    """The LH/LL/RL/RH labels as plotted (name -> x)."""
    columns = view.layers["marker"].columns
    return dict(zip(columns["marker"], columns["x"], strict=True))


def test_markers_are_the_envelopes_crossings_of_delta():
    app = PTJoinExplorer(d=60.0, delta=0.8)
    xs, probs = app.curves()
    marks = app.markers()
    upper, lower = probs.max(axis=0), probs.min(axis=0)
    step = xs[1] - xs[0]
    # LH: the upper envelope first reaches delta; LL: the lower one does (Figure 1(b))
    assert abs(xs[np.argmax(upper >= 0.8)] - marks["LH"]) <= step
    assert abs(xs[np.argmax(lower >= 0.8)] - marks["LL"]) <= step
    assert abs(xs[len(xs) - 1 - np.argmax(lower[::-1] >= 0.8)] - marks["RL"]) <= step
    assert abs(xs[len(xs) - 1 - np.argmax(upper[::-1] >= 0.8)] - marks["RH"]) <= step
    assert _markers(app.curve_view()) == pytest.approx(marks)


def test_delta_d_pi_and_t_det_move_the_markers():
    app = PTJoinModel()
    before = app.markers()
    app.delta = 0.6
    lower = app.markers()
    assert lower["LH"] < before["LH"] and lower["RH"] > before["RH"]
    app.t_det += 100.0
    assert app.markers()["LL"] == pytest.approx(lower["LL"] + 100.0)
    app.d = 200.0
    assert app.markers()["RL"] > lower["RL"] + 100.0
    widths = app.partners.pi
    app.pi = 2 * widths
    assert app.partners.pi == pytest.approx(2 * widths) and app.table.min_d == 2 * widths


def test_interval_model_uses_the_closed_forms():
    from workbench.interval_bounds import interval_bounds

    app = PTJoinModel(model="intervals", d=100.0, pi=40.0, delta=0.7)
    hi = app.base_event()
    assert hi.n_buckets == 1
    closed = interval_bounds(hi.min, hi.max, 100.0, 0.7, 40.0)
    assert app.markers() == pytest.approx(
        {"LH": closed.lh, "LL": closed.ll, "RL": closed.rl, "RH": closed.rh}
    )
    xs, probs = app.curves()  # the envelope over lengths in (0, pi] crosses delta there too
    step = xs[1] - xs[0]
    assert abs(xs[np.argmax(probs.min(axis=0) >= 0.7)] - closed.ll) <= 2 * step


def test_template_editor_rejects_invalid_edits_and_stores_valid_ones():
    ed = TemplatesModel(source="PTJoin Example 3")
    assert len(ed.stream_a) == 2 and ed.buckets.count("\n") == 2  # phi_1: three buckets
    before = ed.stream_a
    ed.buckets = "0, 20, 0.5\n20, 30, 0.6"
    ed.apply(ed)
    assert ed.failed and "sum to" in ed.message and ed.stream_a is before
    ed.buckets = "0, 20, 0.5\n25, 30, 0.5"
    ed.apply(ed)
    assert ed.failed and "contiguous" in ed.message
    ed.buckets = "0 10 x"
    ed.apply(ed)
    assert ed.failed and "line 1" in ed.message
    ed.buckets = "0, 10, 0.25\n10, 50, 0.75"
    ed.apply(ed)
    assert not ed.failed and ed.stream_a[0].length == 50
    assert ed.stream_a[1] == before[1] and ed.stream_b.templates == before.templates
    ed.param.update(count=5, n_buckets=3, max_length=100.0, seed=2)
    ed.generate(ed)
    assert len(ed.stream_b) == 5 and ed.stream_b[4].n_buckets == 3 and ed.stream_b.pi <= 100
    assert ed.param.pair_v.bounds == (0, 4)
    assert ed.bar_title("B").startswith("Stream B: 5 templates, longest pi = ")
    ed.param.update(pair_u=1, pair_v=2)
    assert ed.adjusted_title().startswith("Adjusted histograms of phi_1 (A) and phi_2 (B)")
    assert ed.picked_of("A") == ed.picked and ed.picked_of("B") is None


def test_template_editor_shows_templates_and_adjusted_histograms():
    from workbench.app import TemplateEditor
    from workbench.probability import adjusted_histograms

    ed = TemplateEditor()  # the simulated deployment's learned templates
    assert "motes" in ed.stream_a.name and len(ed.stream_a) == 27
    bars = ed.template_figure("A").select_one({"name": "templates"}).data
    picked = bars["shown"] == "picked template"
    assert picked.sum() == ed.stream_a[0].n_buckets and picked[-picked.sum() :].all()  # on top
    assert set(bars["template"][picked]) == {0}
    adjusted = ed.adjusted_figure()
    ed.param.update(pair_u=3, pair_v=5, offset=200.0)  # the figure follows, in place
    hi, hj = ed.pair()
    points, p_i, p_j = adjusted_histograms(hi, hj)
    widths = np.diff(points)
    data = adjusted.select_one({"name": "adjusted"}).data
    for name, p in (("H_i~", p_i), ("H_j~", p_j)):
        rows = np.char.startswith(data["shown"].astype(str), name)
        assert np.array_equal(data["left"][rows], points[:-1])
        assert np.allclose(data["top"][rows] * widths, p)
    assert "phi_3 (A) and phi_5 (B)" in adjusted.title.text
    assert "P(Xi >= Xj)" in ed.pair_summary()


def test_a_template_legend_names_the_picked_template_only_where_it_is_drawn():
    from workbench.app import TemplateEditor

    ed = TemplateEditor()
    figures = {name: ed.template_figure(name) for name in ("A", "B")}

    def named(name: str) -> list[str]:
        """The legend's entries as the browser draws them: each value of its field, in the
        order of the rows."""
        (item,) = figures[name].legend[0].items
        return list(dict.fromkeys(item.renderers[0].data_source.data[item.label.field]))

    assert named("A") == ["other templates", "picked template"]
    assert named("B") == ["other templates"]  # stream A's template is the picked one
    ed.stream = "B"  # the legends follow, in place
    assert named("A") == ["other templates"]
    assert named("B") == ["other templates", "picked template"]


def test_dashboard_tabs_share_the_edited_templates():
    from workbench.app import dashboard_tabs

    tabs = dict(dashboard_tabs())
    assert list(tabs)[:5] == [
        "Templates",
        "Satisfaction probability",
        "Partition regions",
        "Timing joins",
        "Live join (Spark)",
    ]
    editor, explorer = tabs["Templates"], tabs["Satisfaction probability"]
    editor.source = "PTJoin Example 3"
    assert explorer.stream_b is editor.stream_b and explorer.pi == 40.0


def test_partition_regions_agree_with_the_exact_probability():
    from workbench.app import PartitionRegions

    app = PartitionRegions(d=8000.0, delta=0.8)
    assert app.fast_path
    xs, probs, _, _ = app.nearby()
    regions = app.partitions().classify(xs)
    assert np.all(probs[regions == 2] >= 0.8 - 1e-9)  # SR: every partner satisfies
    assert np.all(probs[regions == 0] < 0.8 + 1e-9)  # VR: none does
    c = app.counts()
    assert c["SR"] >= 5 and sum(c[k] for k in ("SR", "LPR", "RPR", "VR")) == len(app.b_max)
    bound = app.obsolete_bound()
    assert bound < app.partitions().lpr_lo and c["obsolete"] > 0
    before = c["obsolete"]
    app.base += 100  # a later base event makes more partners obsolete (Theorem 4)
    assert app.counts()["obsolete"] > before
    app.d = 500.0  # below max pi: the loose partitions, no obsolete bound
    assert not app.fast_path and app.obsolete_bound() is None
    assert "Eq. 4-6" in app.regions_view().title


def test_coalescing_explorer_streams_and_switches_schemes():
    from workbench.app import CoalescingExplorer
    from workbench.coalesce import recoalesce

    app = CoalescingExplorer()
    assert app.model.source.startswith("simulated") and app.model.position > 0
    eager = app.model.extent()
    app.model.scheme = "lazy"
    lazy = app.model.extent()
    assert len(lazy) > len(eager) and all(c.count == 1 for c in lazy)
    assert sum(c.count for c in eager) == len(lazy)  # same window, stored coalesced
    q = app.model.query()
    oracle = recoalesce(app.model.lazy.raw(), q.equivalence)
    assert [(c.ts, c.te) for c in oracle] == [(c.ts, c.te) for c in eager]
    position = app.model.position
    assert app.model.step(100) == 100 and app.model.position == position + 100
    cp, oop = app.model.cp_oop()
    assert 0 < cp < 1 and 0 < oop < 0.1
    app.model.equivalence = "equal"  # reconfiguring replays the latest readings
    assert app.model.position == position + 100 and app.model.eager.stored > len(eager)
    table = app.model.selection()
    assert set(table["optimal"]) <= {"eager", "lazy"} and len(table) == 4
    eager_cost, lazy_cost = app.model.surfaces()
    app.model.w_update = 100.0  # update-heavy weights favour lazy (coalescing paper, Figure 3)
    eager_heavy, lazy_heavy = app.model.surfaces()
    assert (eager_heavy < lazy_heavy).sum() < (eager_cost < lazy_cost).sum()
    view = app.extent_view()
    assert extent_figure(view).title.text == view.title and "extent:" in view.title
    assert pn.panel(app).get_root() is not None


def test_warm_tabs_renders_every_tab_once():
    from workbench.app.dashboard import TAB_BUILDERS, warm_tabs

    took = warm_tabs()
    assert list(took) == list(TAB_BUILDERS) and all(s > 0 for s in took.values())


def test_a_tab_that_fails_to_warm_is_logged_and_the_others_warm(monkeypatch, caplog):
    from workbench.app import dashboard

    def broken(_: object) -> None:
        raise ValueError("no readings")

    monkeypatch.setitem(dashboard.TAB_BUILDERS, "Whole month", broken)
    took = dashboard.warm_tabs()
    assert "Whole month" not in took and len(took) == len(dashboard.TAB_BUILDERS) - 1
    assert "warming the Whole month tab failed" in caplog.text


def test_coalescing_sessions_share_the_preload_but_not_their_extents():
    """The extents every page opens on are built once; each session streams its own copy."""
    from workbench.app import CoalescingExplorer

    first, second = CoalescingExplorer().model, CoalescingExplorer().model
    assert first.eager is not second.eager and first._adaptive is not second._adaptive
    assert first.eager.counters == second.eager.counters
    assert [(c.ts, c.te) for c in first.extent()] == [(c.ts, c.te) for c in second.extent()]
    first.step(100)
    assert first.eager.counters != second.eager.counters  # the second session's is untouched
    second.step(100)
    assert first.eager.counters == second.eager.counters
    assert first.selection().equals(second.selection())


def test_wjoin_explorer_runs_bew_and_few():
    from workbench.app import WJoinExplorer
    from workbench.app.wjoin_model import WJoinModel
    from workbench.operators import brute_force_wjoin

    app = WJoinExplorer(WJoinModel(hours=2.0, window=120.0))
    bew, few = app.model.run()
    assert bew.results == few.results > 0 and bew.tuples == few.tuples
    assert few.response_ms.mean() > bew.response_ms.mean()  # FEW waits for its periods
    rows = app.model.rows()
    groups = [rows[rows["stream"] == s] for s in range(3)]
    oracle = brute_force_wjoin(
        [g["value"].tolist() for g in groups],
        [g["ts"].tolist() for g in groups],
        [g["id"].tolist() for g in groups],
        app.model.constraints(),
    )
    assert len(oracle) == bew.results
    assert set(app.model.measures()["algorithm"]) == {"BEW", "FEW"}
    app.model.graph = "path"
    assert app.model.constraints().form == "path" and len(app.model.run()) == 2
    app.model.motes = [1]
    assert app.model.run() == [] and "2 to 6 motes" in app.model.message
    assert app.graph_view().title == "Choose 2 to 6 motes"


def test_launcher_binds_localhost_and_takes_origins():
    from workbench.app.serve import serve_command

    cmd = serve_command(port=5100)
    assert cmd[cmd.index("--address") + 1] == "127.0.0.1"
    assert "127.0.0.1:5100" in cmd and "--show" not in cmd
    cmd = serve_command(5100, "0.0.0.0", allow_websocket_origin=["lab.example:80"])
    origins = [cmd[i + 1] for i, x in enumerate(cmd) if x == "--allow-websocket-origin"]
    assert origins == ["lab.example:80"]
    assert "--num-procs" not in cmd  # one process unless configured


def test_launcher_serves_on_the_configured_processes(monkeypatch):
    from workbench.app.serve import serve_command

    monkeypatch.setenv("WORKBENCH_SERVER_PROCS", "3")
    cmd = serve_command(port=5100)
    assert cmd[cmd.index("--num-procs") + 1] == "3"


def test_a_served_page_builds_a_tab_when_it_is_first_opened():
    from bokeh.document import Document

    from workbench.app.dashboard import TAB_BUILDERS, DashboardTabs, build_dashboard

    tabs = DashboardTabs()
    page = build_dashboard(tabs)
    assert tabs.built() == []
    pn.panel(page).server_doc(Document())
    assert tabs.built() == ["Templates"]  # the page costs its first tab only
    switcher = page.switcher
    switcher.active = list(TAB_BUILDERS).index("Satisfaction probability")
    assert tabs.built() == ["Templates", "Satisfaction probability"]
    switcher.active = 0  # back: the same tab, not a second one
    assert tabs.built() == ["Templates", "Satisfaction probability"]


def test_a_tab_once_opened_is_kept_in_the_page_and_not_rendered_again():
    """Coming back to an opened tab changes only which tab shows: the document keeps the
    same models (nothing rendered on the server, the plots keep their state), and no tab
    is built twice."""
    from bokeh.document import Document

    from workbench.app.dashboard import TAB_BUILDERS, DashboardTabs, build_dashboard

    tabs, doc = DashboardTabs(), Document()
    page = build_dashboard(tabs)
    pn.panel(page).server_doc(doc)
    switcher, names = page.switcher, list(TAB_BUILDERS)
    switcher.active = names.index("Partition regions")
    switcher.active = names.index("Coalescing")
    opened = {id(m) for m in doc.models}
    for name in ("Templates", "Partition regions", "Coalescing", "Templates"):
        switcher.active = names.index(name)
        assert {id(m) for m in doc.models} == opened, name
    assert tabs.built() == ["Templates", "Partition regions", "Coalescing"]


def _step(widget: pn.widgets.Widget) -> None:
    """Move a slider or number input one step (back one at its end)."""
    if not hasattr(widget, "start"):  # a discrete slider: its next option
        options = list(widget.values)
        widget.value = options[(options.index(widget.value) + 1) % len(options)]
        return
    step = widget.step or 1
    up = widget.value + step
    widget.value = up if widget.end is None or up <= widget.end else widget.value - step


def test_moving_any_tabs_slider_or_number_updates_the_page_in_place():
    """Every slider and number input of every tab changes the data of the page's Bokeh models,
    never the models: nothing is built, sent whole or walked by Bokeh's recompute of the
    document's models (which costs a walk of every model of every tab opened)."""
    from bokeh.document import Document
    from panel.widgets.input import _SpinnerBase
    from panel.widgets.slider import _SliderBase

    from workbench.app.dashboard import TAB_BUILDERS, build_dashboard

    doc = Document()
    page = build_dashboard()
    pn.panel(page).server_doc(doc)
    moved = []
    for i, name in enumerate(TAB_BUILDERS):
        page.switcher.active = i
        for widget in page.switcher[i].select(lambda o: isinstance(o, _SliderBase | _SpinnerBase)):
            models = {id(m) for m in doc.models}
            _step(widget)
            assert {id(m) for m in doc.models} == models, f"{name}: {widget.name}"
            moved.append(name)
    assert set(moved) == set(TAB_BUILDERS)  # every tab has some
