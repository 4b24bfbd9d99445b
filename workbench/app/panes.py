"""Panes shared by the tabs: plots whose axes follow their data, and each tab's plain-words
introduction with its concept (package data in :mod:`workbench.concepts`, which the docs'
Concepts page includes too)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache, partial
from importlib import resources
from typing import TypeVar

import holoviews as hv
import pandas as pd
import panel as pn
import param
from bokeh.plotting import figure

from workbench.app.controls import confidence_delta
from workbench.viz.figures import View, refresh, view_figure
from workbench.viz.ptjoin import key

W = TypeVar("W", bound=pn.widgets.Widget)

__all__ = [
    "ReadTable",
    "concept",
    "concept_slug",
    "confidence_delta",
    "controls_page",
    "following",
    "following_pane",
    "following_view",
    "in_place",
    "intro",
    "opened_card",
    "plot",
    "plain_help",
    "plot_key",
    "table_html",
]


def _framewise(obj: hv.core.Dimensioned) -> hv.core.Dimensioned:
    """Every element re-ranges its axes on each new frame (HoloViews keeps the first frame's
    ranges otherwise: plots would not follow their data)."""
    return obj.map(lambda el: el.opts(framewise=True), hv.Element)


def plot(obj: hv.core.Dimensioned | hv.DynamicMap | object, **params: object) -> pn.pane.HoloViews:
    """A HoloViews pane whose axes follow its data and stay its own: tabs sharing a dimension
    name (max(H_j)) would otherwise share one range across very different time scales."""
    if isinstance(obj, hv.DynamicMap):
        obj = obj.apply(_framewise)
    return pn.pane.HoloViews(obj, linked_axes=False, **params)


def in_place(update: Callable[[], None]) -> None:
    """Run ``update``, a change of Bokeh models already in a page (a figure's sources), as Panel
    changes its own models: at once when the session's document may be changed now, its events
    sent together; else on the document's next tick, under its lock (a served widget's
    callbacks run without it, and Bokeh refuses a change made there)."""

    def run() -> None:
        with pn.io.unlocked():
            update()

    pn.state.execute(run)


def following(
    owner: param.Parameterized, names: Sequence[str], fig: figure, view: Callable[[], View]
) -> figure:
    """``fig``, redrawn in place (:func:`~workbench.viz.figures.refresh`, :func:`in_place`)
    with a new ``view()`` whenever a parameter of ``owner`` in ``names`` changes; the view is
    computed outside the document's lock."""
    owner.param.watch(lambda *_: in_place(partial(refresh, fig, view())), list(names))
    return fig


def following_pane(
    owner: param.Parameterized,
    names: Sequence[str],
    fig: figure,
    view: Callable[[], View],
    height: int,
) -> pn.pane.Bokeh:
    """``fig`` in a pane as wide as its place and ``height`` px high, redrawn by
    :func:`following`."""
    return pn.pane.Bokeh(
        following(owner, names, fig, view), sizing_mode="stretch_width", height=height
    )


def following_view(
    owner: param.Parameterized,
    view: Callable[[], View],
    names: Sequence[str],
    x_label: str,
    y_label: str,
    height: int = 420,
    x_axis: str = "ms",
) -> pn.pane.Bokeh:
    """A pane of ``view()`` (:func:`~workbench.viz.figures.view_figure`) that
    :func:`following` redraws."""
    fig = view_figure(view(), x_label, y_label, height, x_axis)
    return following_pane(owner, names, fig, view, height)


def plot_key(entries: Sequence[tuple[str, str]]) -> pn.pane.Markdown:
    """A plot's key: each (swatch, meaning) entry in plain words
    (:func:`~workbench.viz.ptjoin.key`)."""
    return pn.pane.Markdown(key(entries), css_classes=["plot-key"], sizing_mode="stretch_width")


def controls_page(
    text: str,
    concept_title: str,
    controls: Sequence[pn.viewable.Viewable],
    shown: pn.viewable.Viewable,
    key: pn.viewable.Viewable,
) -> pn.Column:
    """A tab: its :func:`intro`, then a 300 px control column beside its plot ``shown`` with
    the plot's ``key`` (what its marks mean) under it."""
    return pn.Column(
        intro(text, concept_title),
        pn.Row(
            pn.Column(*controls, width=300),
            pn.Column(shown, key, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        ),
        sizing_mode="stretch_width",
    )


def concept_slug(title: str) -> str:
    """The file name (without ``.md``) of a concept in :mod:`workbench.concepts`: its title in
    lower case, runs of other characters as one hyphen.

    >>> concept_slug("Multi-way window joins")
    'multi-way-window-joins'
    """
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


@cache
def concept(title: str) -> str:
    """The concept ``title`` in plain words (Markdown): the package's
    ``workbench/concepts/<slug>.md`` (:func:`concept_slug`), the text the docs' Concepts page
    shows under the same title; a pointer to that page when there is none.

    >>> concept("Live join").startswith("The live join replays recorded readings")
    True
    """
    found = resources.files("workbench.concepts") / f"{concept_slug(title)}.md"
    if not found.is_file():
        return f"See the docs, page *Concepts*, section *{title}*."
    return found.read_text(encoding="utf-8").strip()


CONCEPT_CSS = """
details.tab-concept { border: 1px solid #e1e4e8; border-radius: 4px; padding: 0 12px;
  margin: 4px 0 8px; }
details.tab-concept > summary { cursor: pointer; font-size: 1.17em; font-weight: 600;
  padding: 8px 0; }
"""
"""How a tab's concept looks: a bordered box whose title opens it (:func:`intro`)."""


def intro(text: str, concept_title: str) -> pn.pane.Markdown:
    """A tab's two or three plain sentences (what you see, what to try), and its concept
    (:func:`concept`, read once per process) in a box that opens on demand (an HTML
    ``details`` element, titled "Concept: ..."), as one pane: one Bokeh model where a card
    with its header, title and body took five, in every session.  The box opens in the
    browser, without the server; closed, its text is not laid out.

    >>> shown = intro("What you see.", "Deployment").object
    >>> shown.startswith("What you see."), "<summary>Concept: Deployment (docs" in shown
    (True, True)
    """
    box = (
        f'<details class="tab-concept"><summary>Concept: {html.escape(concept_title)} '
        f"(docs › Concepts)</summary>\n\n{concept(concept_title)}\n\n</details>"
    )
    return pn.pane.Markdown(
        f"{text}\n\n{box}",
        css_classes=["tab-intro"],
        stylesheets=[CONCEPT_CSS],
        sizing_mode="stretch_width",
    )


def opened_card(
    build: Callable[[], Sequence[pn.viewable.Viewable]], title: str, **params: object
) -> pn.Card:
    """A collapsed card titled ``title`` whose content, ``build()``, is made when the card is
    first opened: a closed card's controls cost every first opening of its tab their models
    (built, walked and sent by the server, laid out by the browser) for a reader who may never
    open it.  ``params``: the card's own (width, sizing_mode, ...).

    >>> card = opened_card(lambda: [pn.pane.Markdown("inside")], "more")
    >>> len(card.objects), card.collapsed
    (0, True)
    >>> card.collapsed = False
    >>> card.objects[0].object
    'inside'
    """
    card = pn.Card(title=title, collapsed=True, **params)

    def opened(event: param.parameterized.Event) -> None:
        if not event.new and not card.objects:
            card.objects = list(build())

    card.param.watch(opened, "collapsed")
    return card


class _PlainHelp:
    """A widget whose help (its ``description``: the parameter's doc with ``from_param``) goes
    to Bokeh as plain text, which the browser shows on the help icon's hover: one Bokeh model
    for the widget, where Panel writes the help as a Tooltip holding an HTML model (three
    models a widget, and the help's Markdown rendered on the server for each session)."""

    def _process_param_change(self, params: dict[str, object]) -> dict[str, object]:
        help_text = params.get("description")
        params = super()._process_param_change(params)  # type: ignore[misc]
        if isinstance(help_text, str) and "description" in params:
            params["description"] = help_text
        return params


@cache
def plain_help(widget: type[W]) -> type[W]:
    """``widget``'s class whose help is plain text (:class:`_PlainHelp`), made once per class.

    >>> number = plain_help(pn.widgets.FloatInput)(value=1.0, description="the help")
    >>> number.get_root().description
    'the help'
    """
    return type(widget.__name__, (_PlainHelp, widget), {"__module__": __name__})


TABLE_CSS = """
.read-table-box { overflow: auto; max-height: 100%; }
table.read-table { border-collapse: collapse; width: 100%; font-size: 13px; }
table.read-table th { position: sticky; top: 0; background: #f1f3f5; text-align: left;
  font-weight: 600; border-bottom: 1px solid #c8ccd0; }
table.read-table th, table.read-table td { padding: 4px 10px; white-space: nowrap; }
table.read-table .number { text-align: right; font-variant-numeric: tabular-nums; }
table.read-table tbody tr:nth-child(even) { background: #f8f9fa; }
table.read-table th[title] { text-decoration: underline dotted; cursor: help; }
"""
"""How a :class:`ReadTable` looks: a sticky header, numbers right-aligned in even digits."""


def table_html(
    frame: pd.DataFrame,
    formats: Mapping[str, Callable[[object], str]] | None = None,
    titles: Mapping[str, str] | None = None,
    tooltips: Mapping[str, str] | None = None,
) -> str:
    """``frame`` as one HTML table: each column's cells through its ``formats`` entry (else
    ``str``; missing values are blank), its header ``titles[column]`` (else its name) with
    ``tooltips[column]`` on hover; numeric columns right-aligned, their headers too.

    >>> shown = table_html(pd.DataFrame({"n": [1200], "who": ["<a>"]}), {"n": "{:,}".format})
    >>> shown.split("<tbody>")[1]
    '<tr><td class="number">1,200</td><td>&lt;a&gt;</td></tr></tbody></table></div>'
    >>> shown.split("<thead>")[1].split("</thead>")[0]
    '<tr><th class="number">n</th><th>who</th></tr>'
    """
    formats, titles, tooltips = formats or {}, titles or {}, tooltips or {}
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    head = "".join(
        "<th"
        + (' class="number"' if number else "")
        + (f' title="{html.escape(tooltips[c])}"' if c in tooltips else "")
        + f">{html.escape(titles.get(c, str(c)))}</th>"
        for c, number in zip(frame.columns, numeric, strict=True)
    )
    cells = [
        ["" if pd.isna(v) else html.escape(formats.get(c, str)(v)) for v in frame[c].tolist()]
        for c in frame.columns
    ]
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="number">{text}</td>' if number else f"<td>{text}</td>"
            for text, number in zip(row, numeric, strict=True)
        )
        + "</tr>"
        for row in zip(*cells, strict=True)
    )
    return (
        f'<div class="read-table-box"><table class="read-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


class ReadTable(pn.viewable.Viewer):
    """A read-only table of a frame (:func:`table_html`), redrawn whenever ``value`` changes.

    The tabs' tables are read, never edited or sorted: one HTML pane serves them, where a
    spreadsheet widget cost every page its scripts and every tab switch showing one about a
    tenth of a second of layout in the browser."""

    value = param.DataFrame(doc="The rows shown, in order.")

    def __init__(
        self,
        value: pd.DataFrame,
        *,
        formats: Mapping[str, Callable[[object], str]] | None = None,
        titles: Mapping[str, str] | None = None,
        tooltips: Mapping[str, str] | None = None,
        height: int | None = None,
    ) -> None:
        super().__init__(value=value)
        self.formats, self.titles, self.tooltips = dict(formats or {}), titles, tooltips
        self._pane = pn.pane.HTML(
            self.html(),
            stylesheets=[TABLE_CSS],
            css_classes=["read-table-pane"],
            sizing_mode="stretch_width",
            height=height,
        )

    def html(self) -> str:
        """The table as shown now."""
        return table_html(self.value, self.formats, self.titles, self.tooltips)

    @param.depends("value", watch=True)
    def _redraw(self) -> None:
        self._pane.object = self.html()

    def __panel__(self) -> pn.pane.HTML:
        return self._pane
