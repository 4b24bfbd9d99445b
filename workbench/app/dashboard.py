"""The dashboard: its tabs in one list, the template editor linked to the PTJoin explorer,
failures shown in the page, and the served template.  This module is also the file that
``panel serve`` runs (``workbench dashboard``): served, it builds the page."""

from __future__ import annotations

import panel as pn

from workbench.app.coalescing import CoalescingExplorer
from workbench.app.deployment import DeploymentExplorer
from workbench.app.live import LiveJoinExplorer
from workbench.app.month import MonthExplorer
from workbench.app.ptjoin import PTJoinExplorer
from workbench.app.regions import PartitionRegions
from workbench.app.templates import TemplateEditor
from workbench.app.wjoin import WJoinExplorer
from workbench.data.streams import default_readings

__all__ = ["TITLE", "build_dashboard", "dashboard_tabs", "header_text", "serve_page", "show_error"]

TITLE = "Uncertain-time stream workbench"


def dashboard_tabs() -> list[tuple[str, pn.viewable.Viewer]]:
    """The tabs in order."""
    editor = TemplateEditor()
    explorer = PTJoinExplorer(
        stream_a=editor.stream_a, stream_b=editor.stream_b, d=3000.0, t_det=5000.0
    )
    editor.param.watch(
        lambda *_: explorer.param.update(stream_a=editor.stream_a, stream_b=editor.stream_b),
        ["stream_a", "stream_b"],
    )
    return [
        ("Templates", editor),
        ("Satisfaction probability", explorer),
        ("Partition regions", PartitionRegions(d=8000.0)),
        ("Live join (Spark)", LiveJoinExplorer()),
        ("Coalescing", CoalescingExplorer()),
        ("Multi-way join", WJoinExplorer()),
        ("Deployment (simulated)", DeploymentExplorer(readings=default_readings())),
        ("Whole month", MonthExplorer()),
    ]


def show_error(exc: BaseException) -> None:
    """Show an exception raised by a callback as a readable message; the app stays up."""
    message = f"{type(exc).__name__}: {exc}"
    if pn.state.notifications is not None:
        pn.state.notifications.error(message, duration=10_000)
    pn.state.log(message, level="error")


def header_text(source: str, replaying: str = "", state: str = "stopped") -> str:
    """The header's data line: the tabs' data, and what the live join replays when that is
    other data.

    >>> header_text("simulated replica", "CSV: 2,000 readings of 2 sensors", "running")
    'data: **simulated replica** · Live join (running): **CSV: 2,000 readings of 2 sensors**'
    """
    text = f"data: **{source}**"
    if replaying and replaying != source:
        text += f" · Live join ({state}): **{replaying}**"
    return text


def build_dashboard() -> pn.template.BootstrapTemplate:
    """The served page: every tab, and the data in the header (simulated by default; what the
    live join replays when it replays other data)."""
    pn.config.exception_handler = show_error
    source = default_readings().attrs.get("source", "readings")
    tabs = dashboard_tabs()
    live = next(tab for _, tab in tabs if isinstance(tab, LiveJoinExplorer))
    header = pn.bind(header_text, source, live.param.replaying, live.param.state)
    return pn.template.BootstrapTemplate(
        title=TITLE,
        header=[pn.pane.Markdown(header, styles={"color": "white"})],
        main=[pn.Tabs(*tabs, dynamic=True, sizing_mode="stretch_width")],
    )


def serve_page() -> None:
    """Load Panel's extensions and mark a new page servable: what each served session runs."""
    pn.extension("tabulator", notifications=True, sizing_mode="stretch_width")
    build_dashboard().servable()


if pn.state.served:  # run by `panel serve` (a module named bokeh_app_...), not on import
    serve_page()
