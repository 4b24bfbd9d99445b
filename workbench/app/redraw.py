"""A plot redrawn in place as what it shows changes: its view method declares its
dependencies once (``param.depends``), and the figure follows them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import partial

import param
from bokeh.plotting import figure

from workbench.app.panes import in_place
from workbench.viz.figures import View, refresh

__all__ = ["redrawn", "redrawn_together"]


def _follow(viewer: param.Parameterized, method: str, redraw: Callable[..., None]) -> None:
    """Call ``redraw`` whenever one of the parameters the method ``method`` of ``viewer``
    depends on changes (its ``param.depends``, declared once)."""
    names: dict[param.Parameterized, list[str]] = defaultdict(list)
    for dep in viewer.param.method_dependencies(method):
        names[dep.inst].append(dep.name)
    for owner, watched in names.items():
        owner.param.watch(redraw, watched)


def redrawn(viewer: param.Parameterized, view: Callable[[], View], fig: figure) -> figure:
    """``fig``, redrawn in place with a new ``view()`` whenever one of the parameters the
    method ``view`` of ``viewer`` depends on changes (its ``param.depends``, declared once);
    the view is computed outside the document's lock."""
    _follow(viewer, view.__name__, lambda *_: in_place(partial(refresh, fig, view())))
    return fig


def redrawn_together(
    viewer: param.Parameterized, views: Callable[[], Sequence[View]], figs: Sequence[figure]
) -> Sequence[figure]:
    """``figs``, redrawn in place with the views ``views()`` returns, one per figure in their
    order, as :func:`redrawn` redraws one: figures that show parts of one computation (the
    cost surfaces of one grid) compute it once a change, not once a figure."""

    def redraw(*_: object) -> None:
        drawn = list(zip(figs, views(), strict=True))
        in_place(lambda: [refresh(fig, view) for fig, view in drawn])

    _follow(viewer, views.__name__, redraw)
    return figs
