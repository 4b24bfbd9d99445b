"""The floor page (``panel serve benchmarks/floor_app.py`` runs it for each session): the
dashboard's tabs, each one figure, four sliders and a sentence, nothing computed."""

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure

from harness.server import READY
from workbench.app.dashboard import TAB_BUILDERS, TITLE
from workbench.app.panes import in_place

pn.extension(sizing_mode="stretch_width")
X = np.linspace(0.0, 10.0, 200)


def tab(name):
    source = ColumnDataSource({"x": X, "y": np.sin(X)})
    fig = figure(height=420, tools="pan,wheel_zoom,box_zoom,reset,save", title=name)
    fig.line("x", "y", source=source)
    sliders = [
        pn.widgets.FloatSlider(label=READY[name] if k == 0 else f"slider {k}", end=10.0)
        for k in range(4)
    ]

    def redraw(event):
        in_place(lambda: setattr(source, "data", {"x": X, "y": np.sin(X + event.new)}))

    sliders[0].param.watch(redraw, "value")
    text = pn.pane.Markdown(f"{name}: one figure, four sliders and this sentence.")
    return pn.Row(pn.Column(*sliders, width=300), pn.Column(text, pn.pane.Bokeh(fig)))


tabs = [(n, pn.param.ParamFunction(lambda n=n: tab(n), lazy=True)) for n in TAB_BUILDERS]
pn.Column(pn.pane.HTML(f"<h2>{TITLE}: the floor</h2>"), pn.Tabs(*tabs, dynamic=True)).servable()
