"""The room's floor: the same walk (``workbench bench room --floor``) against the least page
Panel and Bokeh serve with the dashboard's tabs, so a room's figures read against what the
libraries and the browsers themselves cost on the machine.

Each tab of the floor page holds one figure (one line of 200 points, the dashboard's tools),
four sliders and one sentence; its first slider redraws the line, and the tab's ready label
(:data:`~workbench.app.room.READY`) names that slider.  Nothing is computed: what a session
waits there is what a served Panel page costs at the least.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["FLOOR_APP", "floor_server"]

FLOOR_APP = """
import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure

from workbench.app.dashboard import TAB_BUILDERS, TITLE
from workbench.app.panes import in_place
from workbench.app.room import READY

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
"""
"""The floor page's script (``panel serve`` runs it for each session)."""


@contextmanager
def floor_server(folder: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """The floor page served on a free localhost port (its script and log in ``folder``):
    yields its URL and the server process."""
    from workbench.app.room import free_port, serving

    port = free_port()
    app = folder / "floor.py"
    app.write_text(FLOOR_APP)
    cmd = [sys.executable, "-m", "panel", "serve", str(app), "--address", "127.0.0.1"]
    cmd += ["--port", str(port), "--allow-websocket-origin", f"127.0.0.1:{port}"]
    url = f"http://127.0.0.1:{port}/floor"
    with serving(folder / "floor.txt", cmd, url) as server:
        yield url, server
