"""One set-up call for every notebook: HoloViews plots and Panel apps that load nothing from the
internet, in JupyterLab and in the HTML reports alike.

``pn.extension(..., inline=True)`` (Panel's ``config.inline``) inlines BokehJS and Panel's
JavaScript, and makes Panel's notebook display replace the stylesheets its components import
from Panel's CDN (``cdn.holoviz.org``) by their text from the installed package, on the first
render and on every later update.  HoloViews' own display path does not do that last step, so
HoloViews objects are displayed through Panel (``pn.panel(obj)``) by a HoloViews display hook
(``hv.Store.set_display_hook``): the same plot, with inline stylesheets.
"""

from __future__ import annotations

import holoviews as hv
import panel as pn
from holoviews.core.dimension import LabelledData

__all__ = ["setup_notebook"]


def _through_panel(obj: LabelledData) -> tuple[dict, dict] | None:
    """HoloViews' display hook: render ``obj`` as Panel would, stylesheets inline."""
    if hv.Store.current_backend is None:
        return None
    return pn.panel(obj)._repr_mimebundle_()


def setup_notebook() -> None:
    """Load HoloViews (Bokeh) and Panel for this notebook, every resource
    inline: the first call of each notebook, in JupyterLab, nbmake and ``workbench reports``."""
    hv.extension("bokeh", inline=True, logo=False)
    pn.extension(inline=True)
    hv.Store.set_display_hook("html+js", LabelledData, _through_panel)
