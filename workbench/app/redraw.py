"""A plot redrawn in place as what it shows changes: its view method declares its
dependencies once (``param.depends``), and the figure follows them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import partial

import param
from bokeh.plotting import figure

from workbench.app.panes import in_place
from workbench.viz.figures import View, refresh

__all__ = ["redrawn"]


def redrawn(viewer: param.Parameterized, view: Callable[[], View], fig: figure) -> figure:
    """``fig``, redrawn in place with a new ``view()`` whenever one of the parameters the
    method ``view`` of ``viewer`` depends on changes (its ``param.depends``, declared once);
    the view is computed outside the document's lock."""
    names: dict[param.Parameterized, list[str]] = defaultdict(list)
    for dep in viewer.param.method_dependencies(view.__name__):
        names[dep.inst].append(dep.name)
    for owner, watched in names.items():
        owner.param.watch(lambda *_: in_place(partial(refresh, fig, view())), watched)
    return fig
