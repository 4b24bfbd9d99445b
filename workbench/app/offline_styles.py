"""A served page's stylesheets stay on the server, also for components on hidden tabs.

Panel 1.9 keeps the models of a dynamic ``pn.Tabs``' hidden tabs out of the document, and
when such a pane changes (a run finishing while its user looks at another tab), it renders the
change with ``doc=None`` (``Markup._update`` passes ``model.document``).  For ``doc=None`` its
``Reactive._get_properties`` writes the stylesheets to the CDN's address, and those stylesheet
models are shared with the session's whole page: every component's ``loading.css`` and every
alert's ``alerts.css`` then point at ``cdn.holoviz.org``.  Offline, the page loses those
styles; online, it fetches from the internet.  :func:`keep_styles_local` renders such changes
for the session they happen in instead.
"""

from __future__ import annotations

from typing import Any

from bokeh.document import Document
from panel.io.state import state
from panel.reactive import Reactive

__all__ = ["keep_styles_local"]


def keep_styles_local() -> None:
    """Make Panel render a component whose model is out of every document (``doc=None``) for
    the current session's document, as it renders it while the model is shown: its stylesheets
    keep the server's address (``dist_url``).  Installed once per process; a render outside
    any session (no current document) is left as Panel does it."""
    if getattr(Reactive._get_properties, "keeps_styles_local", False):
        return
    panels_own = Reactive._get_properties

    def _get_properties(self: Reactive, doc: Document | None) -> dict[str, Any]:
        return panels_own(self, doc if doc is not None else state.curdoc)

    _get_properties.keeps_styles_local = True  # type: ignore[attr-defined]
    Reactive._get_properties = _get_properties  # type: ignore[method-assign]
