"""The PTJoin explorer's state and wiring, without a browser."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import pytest

from workbench.app import PTJoinExplorer
from workbench.partitions import Region
from workbench.probability import band_prob
from workbench.timestamps import random_templates


def test_defaults_are_the_papers_example():
    app = PTJoinExplorer()
    assert app.table.delta == 0.8 and app.fast_path
    parts = app.partitions()
    assert set(parts) == {"loose", "tight"}
    tight = parts["tight"]
    # the tight ranges lie inside the loose ones (Theorem 3 vs Eq. 4-6)
    assert parts["loose"].lpr_lo <= tight.lpr_lo and tight.rpr_hi <= parts["loose"].rpr_hi


def test_steering_delta_rebuilds_the_tables_and_moves_the_partitions():
    app = PTJoinExplorer()
    before = app.partitions()["tight"]
    app.delta = 0.5
    assert app.table.delta == 0.5
    after = app.partitions()["tight"]
    assert after.lpr_hi < before.lpr_hi and after.rpr_lo > before.rpr_lo  # lower bar, wider SR


def test_small_window_falls_back_to_the_loose_partitions():
    app = PTJoinExplorer(d=20.0)
    assert not app.fast_path and set(app.partitions()) == {"loose"}
    assert "Eq. 4-6" in app.curve_view().opts.get().kwargs["title"]


def test_plotted_regions_agree_with_the_exact_probability():
    rng = np.random.default_rng(0)
    a = random_templates(rng, 3, 5, 200, name="A")
    b = random_templates(rng, 4, 5, 300, name="B")
    app = PTJoinExplorer(stream_a=a, stream_b=b, d=350.0, t_det=1000.0, delta=0.7)
    p = app.partitions()["tight"]
    hi = a.event(0, 1000.0)
    curves = app.curve_view()
    for curve in curves.traverse(lambda el: el, [hv.Curve]):
        xs, ys = curve.dimension_values(0), curve.dimension_values(1)
        regions = p.classify(xs)
        assert np.all(ys[regions == Region.SR] >= 0.7 - 1e-9)
        assert np.all(ys[regions == Region.VR] < 0.7 + 1e-9)
    assert band_prob(hi, b.event(0, p.lpr_hi + 1), 350.0) >= 0.7


def test_the_page_renders_to_bokeh_models():
    app = PTJoinExplorer()
    root = pn.panel(app).get_root()
    assert root is not None
    hv.renderer("bokeh").get_plot(app.curve_view())
    hv.renderer("bokeh").get_plot(app.templates_view())


def test_template_index_is_bounded_by_the_stream():
    app = PTJoinExplorer()
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
    assert "same view: yes" in app.summary().object
    hv.renderer("bokeh").get_plot(app.extent_view())
    hv.renderer("bokeh").get_plot(app.map_view())
    assert pn.panel(app).get_root() is not None
