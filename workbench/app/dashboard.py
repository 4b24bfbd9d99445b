"""The dashboard: its tabs in one list, the template editor linked to the PTJoin explorer,
failures shown in the page, the served page (a header bar over the tabs) and the server's
start once per process (:func:`setup_server`).  The app file ``apps/dashboard.py`` serves the
page (:func:`serve_page`); installed from a wheel, which has no ``apps/``, ``workbench
dashboard`` serves this module, which builds the page when ``panel serve`` runs it."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterable

import panel as pn
import param
from panel.io.resources import get_dist_path
from panel.io.state import set_curdoc

from workbench.app.coalescing import CoalescingExplorer
from workbench.app.deployment import DeploymentExplorer
from workbench.app.live import LiveJoinExplorer
from workbench.app.month import MonthExplorer
from workbench.app.offline_styles import keep_styles_local
from workbench.app.ptjoin import PTJoinExplorer
from workbench.app.race import TimingJoinsExplorer
from workbench.app.regions import PartitionRegions
from workbench.app.serve import disconnect_message, once_per_process
from workbench.app.templates import TemplateEditor
from workbench.app.wjoin import WJoinExplorer
from workbench.config import ENV, settings
from workbench.data.streams import default_readings

__all__ = [
    "TABS_WARM",
    "TAB_BUILDERS",
    "TITLE",
    "Dashboard",
    "DashboardTabs",
    "build_dashboard",
    "dashboard_tabs",
    "header_text",
    "serve_page",
    "setup_server",
    "show_error",
    "warm_tabs",
]

TITLE = "Uncertain-time stream workbench"


class DashboardTabs:
    """One session's tabs, each built when first asked for (:data:`TAB_BUILDERS`): a page
    costs only its first tab, and a tab the user never opens costs nothing.  ``on_build`` is
    told each tab built (the header follows the live join that way)."""

    def __init__(self, on_build: Callable[[str, pn.viewable.Viewer], object] | None = None):
        self._built: dict[str, pn.viewable.Viewer] = {}
        self.on_build = on_build

    def __getitem__(self, name: str) -> pn.viewable.Viewer:
        if name not in self._built:
            self._built[name] = TAB_BUILDERS[name](self)
            if self.on_build is not None:
                self.on_build(name, self._built[name])
        return self._built[name]

    def built(self) -> list[str]:
        """The tabs built so far, in the order built."""
        return list(self._built)


def _satisfaction(tabs: DashboardTabs) -> PTJoinExplorer:
    """The PTJoin explorer on the template editor's streams, following its edits."""
    editor = tabs["Templates"]
    explorer = PTJoinExplorer(
        stream_a=editor.stream_a, stream_b=editor.stream_b, d=3000.0, t_det=5000.0
    )
    editor.param.watch(
        lambda *_: explorer.param.update(stream_a=editor.stream_a, stream_b=editor.stream_b),
        ["stream_a", "stream_b"],
    )
    return explorer


TAB_BUILDERS: dict[str, Callable[[DashboardTabs], pn.viewable.Viewer]] = {
    "Templates": lambda _: TemplateEditor(),
    "Satisfaction probability": _satisfaction,
    "Partition regions": lambda _: PartitionRegions(d=8000.0),
    "Timing joins": lambda _: TimingJoinsExplorer(),
    "Live join (Spark)": lambda _: LiveJoinExplorer(),
    "Coalescing": lambda _: CoalescingExplorer(),
    "Multi-way join": lambda _: WJoinExplorer(),
    "Deployment (simulated)": lambda _: DeploymentExplorer(readings=default_readings()),
    "Whole month": lambda _: MonthExplorer(),
}
"""The tabs in order, each with how to build it for a session."""
LIVE_TAB = "Live join (Spark)"
TABS_WARM = "Dashboard tabs are warm"
"""What the server's log says once every tab has been built and rendered once
(:func:`warm_tabs`)."""


def dashboard_tabs() -> list[tuple[str, pn.viewable.Viewer]]:
    """Every tab, built now, in order (the benchmarks and tests use them all)."""
    tabs = DashboardTabs()
    return [(name, tabs[name]) for name in TAB_BUILDERS]


def warm_tabs(names: Iterable[str] = TAB_BUILDERS) -> dict[str, float]:
    """Build and render the tabs ``names`` (every tab by default) once, into a document no one
    sees, and return the seconds each took: run at server start (:func:`setup_server`), so the
    imports, compiled kernels and shared caches a tab needs are ready before its first user
    opens it (``./dev setup`` runs it once per kernel change to fill numba's on-disk cache).
    A tab that fails is logged and left out; the server still starts, and the tab shows its
    error when opened."""
    from bokeh.document import Document

    tabs, took = DashboardTabs(), {}
    for name in names:
        start = time.perf_counter()
        try:
            doc = Document()
            doc._template_variables["dist_url"] = get_dist_path()  # as a session's (serve_page)
            with set_curdoc(doc):  # its own, also when a session's page runs the warm-up
                pn.panel(tabs[name]).get_root(doc)
        except Exception:  # noqa: BLE001 (the tab's own page reports it to its user)
            logging.getLogger("workbench").exception("warming the %s tab failed", name)
            continue
        took[name] = time.perf_counter() - start
    return took


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


HEADER_STYLE = {"background": "#0072b5", "color": "white", "padding": "0 12px"}
"""The header bar's colours (the page has no template: a template's design adds its stylesheets
to every component, which cost each tab switch about a third more in the browser)."""


KEPT_TABS_CSS = """div[style*="visibility: hidden"] { display: none !important; }"""
"""Panel's tabs hide the tabs not shown by ``visibility``, which leaves them in the page's
layout: each tab opened made every later tab switch and slider move lay out and paint all the
tabs opened before it (one user's switch median 735 ms with them, 518 without; a return to a
tab still takes about 13 ms, the figures' sizes being kept)."""


class Dashboard(pn.viewable.Viewer):
    """The served page: a header bar (the title and the data, :func:`header_text`) above the
    tabs (:attr:`switcher`), each built when first opened and then kept in the page: coming
    back to a tab renders nothing on the server, and its plots keep their state."""

    def __init__(self, tabs: DashboardTabs, header: pn.pane.Markdown) -> None:
        super().__init__()
        self.tabs, self.header = tabs, header
        first, *rest = TAB_BUILDERS
        self.switcher = pn.Tabs(
            (first, self._lazy(first)),
            *((name, pn.Spacer(name=name)) for name in rest),
            sizing_mode="stretch_width",
            stylesheets=[KEPT_TABS_CSS],
        )
        self.switcher.param.watch(self._open, "active")

    def _lazy(self, name: str) -> pn.param.ParamFunction:
        """The tab ``name``, built when first rendered (the page's first tab)."""
        return pn.param.ParamFunction(lambda: self.tabs[name], lazy=True)

    def _open(self, event: param.parameterized.Event) -> None:
        """Build a tab the first time it is shown, in place of its placeholder."""
        name, tab = list(TAB_BUILDERS)[event.new], self.switcher[event.new]
        if isinstance(tab, pn.Spacer):
            self.switcher[event.new] = (name, self.tabs[name])

    def __panel__(self) -> pn.Column:
        bar = pn.Row(
            pn.pane.HTML(f"<h2 style='margin: 8px 0'>{TITLE}</h2>", styles={"color": "white"}),
            self.header,
            styles=HEADER_STYLE,
            sizing_mode="stretch_width",
        )
        return pn.Column(bar, self.switcher, sizing_mode="stretch_width")


def build_dashboard(tabs: DashboardTabs | None = None) -> Dashboard:
    """The served page: every tab, each built when first opened (``tabs``: the session's,
    new by default), and the data in the header (simulated by default; what the live join
    replays when it replays other data)."""
    pn.config.exception_handler = show_error
    source = default_readings().attrs.get("source", "readings")
    header = pn.pane.Markdown(header_text(source), styles={"color": "white"})

    def follow(name: str, tab: pn.viewable.Viewer) -> None:
        if name == LIVE_TAB:  # the header names what the live join replays
            run = tab.spark

            def show(*_: object) -> None:
                header.object = header_text(source, run.replaying, run.phase())

            run.param.watch(show, ["replaying", "state"])
            tab.model.param.watch(show, "paused")

    tabs = tabs or DashboardTabs()
    tabs.on_build = follow
    return Dashboard(tabs, header)


def setup_server() -> None:
    """Start the dashboard's server, once per process (later calls return at once,
    :func:`~workbench.app.serve.once_per_process`): the ``workbench`` log goes to the server's
    output (stderr, INFO) and says when the tabs and when Spark are warm; the shared Spark
    session (:func:`workbench.spark.warm.start_shared_session`) starts in a background
    thread, so Java is up by the time a user presses Start in the live tab (unless
    ``WORKBENCH_SPARK_AT_START`` is no; without Java or PySpark the page still loads, and the
    live tab says why Spark cannot start when Start is pressed); then every tab is built and
    rendered once (:func:`warm_tabs`), and the objects made so far (imports, caches, warm
    tabs) are frozen out of the garbage collector's full passes (``gc.freeze``): a full pass
    over them stopped every session for 0.2-0.5 s, several times a minute in a room of eight.

    ``panel serve --setup workbench/app/server_setup.py`` runs it at the server's start, in
    each process, before the first session (``workbench dashboard`` does); otherwise the first
    session's :func:`serve_page` does, and that page waits for it."""
    once_per_process(_start_server)


def _start_server() -> None:
    """:func:`setup_server`'s work."""
    log = logging.getLogger("workbench")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False  # once: not again through the server's root handler
    try:
        from workbench.spark.warm import start_shared_session
    except ImportError as exc:  # pyspark missing: the analytical tabs still work
        log.warning("Spark not started in the background: %s", exc)
    else:
        if settings().spark_at_start:
            start_shared_session()
        else:
            log.info("Spark starts at the first Spark run (%s is no)", ENV["spark_at_start"])
    start = time.perf_counter()
    took = sorted(warm_tabs().items(), key=lambda item: -item[1])
    gc.collect()  # what is garbage now is not frozen
    gc.freeze()
    log.info(
        "%s after %.1f s (slowest: %s); %d objects frozen",
        TABS_WARM,
        time.perf_counter() - start,
        ", ".join(f"{name} {seconds:.2f} s" for name, seconds in took[:3]),
        gc.get_freeze_count(),
    )


def serve_page() -> None:
    """The page of a served session, after the server's start (:func:`setup_server`, done
    once per process): Panel's extensions loaded and a new page marked servable.

    The session's document knows where Panel's stylesheets are served before any component
    is made: Panel records that only when it renders the page, and until then it writes each
    new component's stylesheets with the CDN's address (a template's design wrote them back;
    without one, a page fetched them from the internet when a shared stylesheet was written
    after the page was rendered).  A change on a hidden tab keeps them there too
    (:func:`~workbench.app.offline_styles.keep_styles_local`)."""
    setup_server()
    pn.state.curdoc._template_variables["dist_url"] = get_dist_path()
    keep_styles_local()
    pn.extension(
        notifications=True,
        sizing_mode="stretch_width",
        disconnect_notification=disconnect_message(settings().max_upload_mb),
    )
    build_dashboard().servable(title=TITLE)


if __name__.startswith("bokeh_app_"):  # served from a wheel (a checkout serves apps/), per
    serve_page()  # session (what pn.state.served tests, without its inspect.stack()'s 40 ms)
