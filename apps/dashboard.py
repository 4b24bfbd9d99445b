"""The workbench dashboard: `panel serve apps/dashboard.py` (or `./dev dashboard`)."""

import panel as pn

from workbench.app import build_dashboard

pn.extension("tabulator", notifications=True, sizing_mode="stretch_width")

if pn.state.served:
    build_dashboard().servable()
