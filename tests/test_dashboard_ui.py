"""The served dashboard in real headless Chromium (Debian ``chromium`` through Playwright's
``executable_path``; ``./dev`` installs it when missing).  Tests wait on conditions, never sleep.

Screenshots go to the session's temporary folder and, when ``WORKBENCH_SCREENSHOTS`` names a
folder, there too.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import statistics
import time
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from harness.server import DATA_SIGNATURE, READY

pytestmark = pytest.mark.ui

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TABS = (
    "Templates",
    "Satisfaction probability",
    "Partition regions",
    "Timing joins",
    "Live join (Spark)",
    "Coalescing",
    "Multi-way join",
    "Deployment (simulated)",
    "Whole month",
)
# every Bokeh ColumnDataSource whose data has ``column``, as lists of its x values / lengths
SOURCES_WITH = """(column) => {
  const out = [];
  for (const doc of Bokeh.documents)
    for (const m of doc.all_models)
      if (m.data && m.data[column] !== undefined) out.push(Array.from(m.data[column]));
  return out;
}"""
MARKERS = """() => {
  for (const doc of Bokeh.documents)
    for (const m of doc.all_models)
      if (m.data && m.data.marker && Array.from(m.data.marker).includes("LH"))
        return Object.fromEntries(Array.from(m.data.marker).map((k, i) => [k, m.data.x[i]]));
  return null;
}"""

ROOT_TEXTS = """() => {
  const texts = [];
  const walk = (root) => {
    if (root !== document) texts.push(root.textContent || "");
    for (const n of root.querySelectorAll("*")) if (n.shadowRoot) walk(n.shadowRoot);
  };
  walk(document);
  return texts;
}"""
"""The page's texts, one for each shadow root (Panel and Bokeh draw every component in one,
out of the document's own text)."""
SHOWN = f"""(text) => ({ROOT_TEXTS})().some((t) => t.includes(text))"""
"""Whether the page shows ``text`` (the argument)."""
PAGE_TEXT = f"""() => ({ROOT_TEXTS})().join("\\n")"""
"""All the page's texts, in one string."""


def _largest(pattern: str) -> str:
    """A page function: the largest count that the first group of the JS regex ``pattern``
    reads in any of the page's texts, or -1 when none matches."""
    return f"""() => {{
  const found = ({ROOT_TEXTS})().map((t) => t.match({pattern})).filter(Boolean)
    .map((m) => parseInt(m[1].replace(/,/g, "")));
  return found.length ? Math.max(...found) : -1;
}}"""


PUSHED = _largest("/([0-9,]+) of [0-9,]+ readings pushed/")
PAIRS = _largest("/([0-9,]+) pairs joined ·/")  # the live tab's (the month says "over")
MONTH = rf"""() => {{
  const found = ({ROOT_TEXTS})()
    .map((t) => t.match(/[0-9,]+ pairs joined over .*? events\/s\)/)).filter(Boolean);
  return found.length ? found[found.length - 1][0] : "";
}}"""
"""The Whole month tab's last re-join summary ("" before the first)."""

GRAPH_LABELS = """() => {
  const find = (root) => {
    const svg = root.querySelector("svg.constraint-graph");
    if (svg) return Array.from(svg.querySelectorAll("text")).slice(1).map((t) => t.textContent);
    for (const n of root.querySelectorAll("*"))
      if (n.shadowRoot) { const found = find(n.shadowRoot); if (found) return found; }
    return null;
  };
  return find(document);
}"""
"""The Multi-way join's constraint graph (SVG): its labels after its title, in order."""
PLOTS = f"() => ({DATA_SIGNATURE})() + '#' + JSON.stringify(({GRAPH_LABELS})())"
"""What the plots show: every data source's signature and the constraint graph's labels (a
drawing, not a Bokeh figure)."""

TITLED = """(start) => {
  for (const doc of Bokeh.documents)
    for (const m of doc.all_models)
      if (typeof m.text === "string" && m.text.startsWith(start)) return true;
  return false;
}"""

LAYOUT_PROBLEMS = "\n".join(  # the function, without its leading comment
    line
    for line in (Path(__file__).parent / "support" / "layout_problems.js").read_text().splitlines()
    if not line.startswith("//")
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium driven by Playwright (no downloaded browser)."""
    if CHROMIUM is None:
        pytest.skip("chromium not found on PATH (./dev installs Debian's chromium as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(browser, server):
    """One loaded page for the module; records requests leaving localhost and page errors."""
    pg = browser.new_page(viewport={"width": 1500, "height": 1000})
    pg.external_requests = []
    pg.page_errors = []
    pg.on(
        "request",
        lambda r: (
            pg.external_requests.append(r.url)
            if not r.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:"))
            else None
        ),
    )
    pg.on("pageerror", lambda e: pg.page_errors.append(str(e)))
    pg.set_default_timeout(30_000)
    pg.goto(server)
    pg.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    yield pg
    pg.close()


@pytest.fixture(autouse=True)
def offline(page):
    """After each test: the page fetched nothing from outside this machine while it ran."""
    yield
    fetched = list(page.external_requests)
    page.external_requests.clear()
    assert fetched == [], f"the page fetched from outside localhost: {fetched}"


def open_tab(page, tab: str) -> None:
    page.locator(".bk-tab").filter(has_text=re.compile(f"^{re.escape(tab)}$")).click()
    page.get_by_text(READY[tab], exact=False).filter(visible=True).first.wait_for()
    page.locator("canvas:visible").first.wait_for(state="visible")  # opened tabs stay in the page


def test_every_tab_renders_offline_and_is_saved(page, screenshots):
    page.get_by_text("data: simulated replica of the Intel Berkeley lab deployment").wait_for()
    for k, tab in enumerate(TABS):
        open_tab(page, tab)
        for folder in screenshots:
            page.screenshot(path=str(folder / f"{k + 1}-{tab.split()[0].lower()}.png"))
    assert all(
        (screenshots[0] / f"{k + 1}-{t.split()[0].lower()}.png").stat().st_size > 10_000
        for k, t in enumerate(TABS)
    )
    assert page.page_errors == []


def test_the_floor_plan_draws_nothing_left_of_its_axis(page):
    """No dark mark at the Deployment floor plan's left edge, where a title wider than the
    figure's first paint left a column of its first letter (darkest channel 115; a trace of
    the grid's first pixels, 235 on white, remains)."""
    import io

    from PIL import Image

    open_tab(page, "Deployment (simulated)")
    box = page.locator("canvas:visible").first.bounding_box()
    shot = page.screenshot(clip={"x": box["x"], "y": box["y"], "width": 3, "height": 80})
    darkest = int(np.asarray(Image.open(io.BytesIO(shot)).convert("RGB")).min())
    assert darkest >= 200, f"a mark at the floor plan's left edge (darkest channel {darkest})"


def test_delta_slider_moves_the_markers(page):
    open_tab(page, "Satisfaction probability")
    page.wait_for_function(f"() => ({MARKERS})() !== null")
    before = page.evaluate(MARKERS)
    handle = page.locator(".noUi-handle >> visible=true").first  # the delta slider comes first
    handle.focus()
    for _ in range(10):
        handle.press("ArrowLeft")
    page.wait_for_function(f"(lh) => ({MARKERS})().LH < lh - 1e-6", arg=before["LH"])
    page.wait_for_function(f"(rh) => ({MARKERS})().RH > rh + 1e-6", arg=before["RH"])
    after = page.evaluate(MARKERS)
    # a lower delta widens the join: LH and LL move left, RL and RH right
    assert after["LH"] < before["LH"] and after["LL"] < before["LL"]
    assert after["RL"] > before["RL"] and after["RH"] > before["RH"]
    page.get_by_text("0.70", exact=True).filter(visible=True).first.wait_for()  # the slider's label


def test_switching_the_coalescing_scheme_changes_the_extent(page):
    open_tab(page, "Coalescing")
    lengths = f"() => ({SOURCES_WITH})('count').map(c => c.length)"  # the extent's tuples
    page.wait_for_function(f"() => ({lengths})().length === 1")
    (eager,) = page.evaluate(lengths)
    page.get_by_role("button", name="lazy", exact=True).click()
    page.wait_for_function(f"(n) => ({lengths})()[0] > n", arg=eager)
    (lazy,) = page.evaluate(lengths)
    assert lazy > eager  # the lazy extent stores every raw tuple
    page.get_by_role("button", name="eager", exact=True).click()
    page.wait_for_function(f"(n) => ({lengths})()[0] < n", arg=lazy)


def test_the_stream_runs_without_blocking(page):
    open_tab(page, "Coalescing")
    start = page.evaluate(PUSHED)
    page.get_by_role("button", name="Run / pause").click()
    page.wait_for_function(f"(n) => ({PUSHED})() > n + 300", arg=start)
    page.get_by_role("button", name="lazy", exact=True).click()  # answers while running
    page.wait_for_function(TITLED, arg="lazy extent")  # the timeline's title
    page.get_by_role("button", name="Run / pause").click()
    assert page.evaluate(PUSHED) > start + 300


def test_an_invalid_template_edit_shows_its_message(page):
    open_tab(page, "Templates")
    page.locator("textarea >> visible=true").first.fill("0, 10, 0.5\n10, 5, 0.5")
    page.get_by_role("button", name="Apply").click()
    page.get_by_text("Rejected: edges[1] = 10.0 and edges[2] = 5.0").wait_for()
    page.locator("textarea >> visible=true").first.fill("0, 10, 0.5\n10, 30, 0.5")
    page.get_by_role("button", name="Apply").click()
    page.get_by_text("Stored phi_0 of stream A").wait_for()


def test_a_tabs_concept_card_opens_with_its_text(page):
    open_tab(page, "Templates")
    page.get_by_text("Concept: Histogram timestamps").click()  # written when first opened
    page.get_by_text("the histogram of that lateness for one sensor").first.wait_for()


def test_a_multiway_run_reports_its_measures(page):
    open_tab(page, "Multi-way join")
    page.get_by_role("button", name="Run", exact=True).click()  # runs in a worker thread
    page.get_by_text("tuples from 3 motes").wait_for()
    page.get_by_text("FEW", exact=True).last.wait_for()


def layout_problems(page) -> list[str]:
    """Wait (up to 20 s) for the page to settle into a sound layout; what is still wrong."""
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(f"() => ({LAYOUT_PROBLEMS})().length === 0", timeout=20_000)
    return page.evaluate(LAYOUT_PROBLEMS)


def _move_first_slider(page) -> None:
    """Five steps right on the tab's first visible slider; wait until some plot moved."""
    before = page.evaluate(PLOTS)
    handle = page.locator(".noUi-handle >> visible=true").first
    handle.focus()
    for _ in range(5):
        handle.press("ArrowRight")
    page.wait_for_function(f"(b) => ({PLOTS})() !== b", arg=before)


def _generate(page) -> None:
    before = page.evaluate(DATA_SIGNATURE)
    page.get_by_role("button", name="Generate random templates").click()
    page.wait_for_function(f"(b) => ({DATA_SIGNATURE})() !== b", arg=before)


def _stream_a_while(page) -> None:
    start = page.evaluate(PUSHED)
    page.get_by_role("button", name="Run / pause").click()
    page.wait_for_function(f"(n) => ({PUSHED})() > n + 300", arg=start)
    page.get_by_role("button", name="Run / pause").click()


def _join_month(page) -> None:
    page.get_by_role("button", name="Join the whole month").click()
    page.wait_for_function(f"() => ({MONTH})() !== ''", timeout=240_000)


def _race(page) -> None:
    """Start the race, pause it once it ran a while (the slider then steers the paused race),
    the eight agreeing so far.  At 500x real time the replay lasts about 45 s, so a page
    that lags behind a busy server still pauses it before it ends."""
    speed = page.locator("input[type=text] >> visible=true").first  # the replay's speed
    speed.fill("500")
    speed.press("Enter")
    toggle = page.get_by_role("button", name="Start / pause")
    toggle.click()
    page.get_by_text(re.compile(r"[0-9,]+ of [0-9,]+ events \(running\)")).wait_for()
    toggle.click()
    page.get_by_text(re.compile(r"events \(paused\): (all|the eager)")).wait_for()


def _run_multiway(page) -> None:
    """Run, and wait for this run's outcome: the page's texts change (the measured times do
    with every run) and say a run joined, not that one is running."""
    before = page.evaluate(PAGE_TEXT)
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function(
        f"""(b) => {{ const t = ({PAGE_TEXT})();
            return t !== b && t.includes("motes joined:") && !t.includes("Running"); }}""",
        arg=before,
    )


MAIN_ACTIONS = {  # each tab's main action before the slider move (the slider is the action of
    "Templates": _generate,  # the tabs without one)
    "Satisfaction probability": None,
    "Partition regions": None,
    "Timing joins": _race,
    "Coalescing": _stream_a_while,
    "Multi-way join": _run_multiway,
    "Deployment (simulated)": None,
    "Whole month": _join_month,
}


@pytest.mark.parametrize("tab", list(MAIN_ACTIONS))
def test_after_its_action_and_a_slider_move_a_tab_looks_sound(page, screenshots, tab):
    open_tab(page, tab)
    if MAIN_ACTIONS[tab] is not None:
        MAIN_ACTIONS[tab](page)
    _move_first_slider(page)
    _settled(page)  # the move's whole outcome, not its first patch
    problems = layout_problems(page)
    name = f"{TABS.index(tab) + 1}-{tab.split()[0].lower()}-after-action.png"
    page.mouse.move(0, 0)  # off the clicked button: its tooltip would cover the controls
    for folder in screenshots:
        page.screenshot(path=str(folder / name))
    assert problems == [], f"{tab}: {problems}"
    assert page.page_errors == []


def test_the_whole_month_rejoins_on_every_slider_move(page):
    """Eight delta moves, each seen in the page (2.6 M events re-joined each time).  The
    figure is the server's, ``./dev bench dashboard``; the page's wait on this 2-core machine
    shares its cores with the other test worker, so the bound only catches a tenfold loss."""
    open_tab(page, "Whole month")
    _join_month(page)
    handle = page.locator(".noUi-handle >> visible=true").first  # delta
    waits = []
    for _ in range(8):
        before = page.evaluate(MONTH)
        handle.focus()
        pressed = time.monotonic()
        handle.press("ArrowLeft")
        page.wait_for_function(f"(b) => ({MONTH})() !== b", arg=before, timeout=30_000)
        waits.append(time.monotonic() - pressed)
    print(f"whole-month re-join seen in the page after {sorted(waits)} s")
    assert statistics.median(waits) < 10, waits
    assert page.page_errors == []


TITLES = """() => {
  const out = [];
  for (const doc of Bokeh.documents)
    for (const m of doc.all_models)
      if (m.constructor.__name__ === "Title")
        out.push(m.text);
  return out.sort().join("|");
}"""
"""Every plot title in the page."""
LOADING = """() => {
  const busy = (root) => {
    for (const n of root.querySelectorAll("*"))
      if (n.classList.contains("pn-loading") || (n.shadowRoot && busy(n.shadowRoot))) return true;
    return false;
  };
  return busy(document);
}"""
"""Whether any part of the page shows Panel's loading overlay (a stale figure)."""


def _settled(page) -> str:
    """Wait until no figure is marked stale and the plots' data and titles hold still for
    half a second; what they then are."""
    state = f"() => ({PLOTS})() + '#' + ({TITLES})()"
    last = None
    for _ in range(120):
        page.wait_for_function(f"() => !({LOADING})()", timeout=60_000)
        now = page.evaluate(state)
        if now == last:
            return now
        last = now
        page.wait_for_timeout(500)
    raise AssertionError("the page never settled")


def _press(page, key: str, wait: bool) -> None:
    """``key`` on the tab's first visible slider; with ``wait``, until some plot changed."""
    before = page.evaluate(f"() => ({PLOTS})() + '#' + ({TITLES})()")
    handle = page.locator(".noUi-handle >> visible=true").first
    handle.focus()
    handle.press(key)
    if wait:
        page.wait_for_function(f"(b) => ({PLOTS})() + '#' + ({TITLES})() !== b", arg=before)


QUICK_TABS = {  # each tab whose first slider's moves recompute what it shows, and its action
    "Satisfaction probability": None,
    "Partition regions": None,
    "Coalescing": None,
    "Multi-way join": None,
    "Deployment (simulated)": None,
    "Whole month": _join_month,
}


@pytest.mark.parametrize("tab", list(QUICK_TABS))
def test_quick_moves_end_on_what_the_last_setting_shows(page, tab):
    """Five key presses on a slider without waiting, then, once the page is idle, everything
    shown (plot data, plot titles) is what one deliberate step away and back shows: nothing
    describes a setting the user passed over (the newest request wins)."""
    open_tab(page, tab)
    if QUICK_TABS[tab] is not None:
        QUICK_TABS[tab](page)
    for _ in range(5):
        _press(page, "ArrowRight", wait=False)
    quick = _settled(page)
    _press(page, "ArrowRight", wait=True)
    _press(page, "ArrowLeft", wait=True)
    assert _settled(page) == quick
    if tab == "Whole month":  # the readout, the title and the chart tell of one re-join
        said = page.evaluate(MONTH)
        pairs = int(re.search(r"([0-9,]+) pairs", said)[1].replace(",", ""))
        delta = re.search(r"delta = ([0-9.]+)", said)[1]
        assert page.evaluate(TITLED, f"Pairs per hour, delta = {delta},")
        per_hour = page.evaluate(f"() => ({SOURCES_WITH})('y')")
        assert pairs in [round(sum(y)) for y in per_hour]
    assert page.page_errors == []


def test_a_multiway_result_made_stale_by_a_move_says_so(page, screenshots):
    """Moves while a run joins do not reach it; once it ends, the page says which settings
    moved since, and a new run clears that."""
    open_tab(page, "Multi-way join")
    page.get_by_role("button", name="Run", exact=True).click()
    for _ in range(5):
        _press(page, "ArrowRight", wait=False)  # the window (s), during the run
    stale = page.get_by_text("These results are stale: window (s) changed since this run")
    stale.filter(visible=True).first.wait_for()
    _settled(page)
    window = page.evaluate(
        """() => { for (const doc of Bokeh.documents) for (const m of doc.all_models)
                     if (m.title === "window (s)") return m.value; }"""
    )
    labels = page.evaluate(GRAPH_LABELS)
    edges = [f"{window:g} s"] * 3  # the graph's labels: its edges' windows, then its streams
    assert labels == [*edges, "mote 1", "mote 2", "mote 3"], (window, labels)
    page.mouse.move(0, 0)
    for folder in screenshots:
        page.screenshot(path=str(folder / "7-multi-way-stale.png"))
    _run_multiway(page)
    assert not page.evaluate(SHOWN, "These results are stale")
    assert page.page_errors == []


@pytest.mark.spark
def test_the_live_join_runs_on_spark_and_takes_a_new_delta(page, screenshots):
    open_tab(page, "Live join (Spark)")
    started = time.monotonic()
    page.get_by_role("button", name="Start", exact=True).click()
    # the JVM started with the server; the replay begins, micro-batches commit pairs
    page.wait_for_function(f"() => ({PAIRS})() > 0", timeout=150_000)
    first_pairs = time.monotonic() - started
    print(f"first pairs in the page {first_pairs:.1f} s after Start (goal 10 s)")
    first = page.evaluate(PAIRS)
    ui = page.get_by_role("link", name="Spark UI")
    assert ui.get_attribute("href").startswith("http://127.0.0.1:")
    page.wait_for_function(f"(n) => ({PAIRS})() > n", arg=first, timeout=60_000)
    charted = f"() => ({SOURCES_WITH})('elapsed_s').map(c => c.length)"
    page.wait_for_function(
        f"() => ({charted})().length > 0 && Math.min(...({charted})()) >= 3", timeout=90_000
    )
    handle = page.locator(".noUi-handle >> visible=true").first  # delta, the only slider
    handle.focus()
    pressed = time.monotonic()
    handle.press("ArrowLeft")
    page.get_by_text("delta = 0.79 applies from the next micro-batch").wait_for()
    latency = time.monotonic() - pressed
    print(f"delta 0.8 -> 0.79: message shown {1000 * latency:.0f} ms after the key press")
    assert layout_problems(page) == []
    for folder in screenshots:
        page.screenshot(path=str(folder / "4-live-running.png"))
    page.get_by_role("button", name="Stop", exact=True).click()
    page.get_by_text("Stopped after").wait_for(timeout=60_000)
    # regression bounds: the figures are bench live's (the server's), and here the page
    # shares the 2 cores with the other test worker
    assert page.evaluate(PAIRS) > first and latency < 10
    assert first_pairs < 60
    assert (screenshots[0] / "4-live-running.png").stat().st_size > 10_000
    assert page.page_errors == []
