"""The Coalescing and Multi-way join tabs run on Spark in the served dashboard (issue 16), in
real headless Chromium: choose Spark, watch the run catch up and agree with the in-process
view, change the equivalence (a new checkpoint, announced), and save a screenshot of each tab
after its Spark run.

The server, browser, page and screenshot fixtures are those of ``test_dashboard_ui``.
"""

from __future__ import annotations

import contextlib
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_dashboard_ui import (  # noqa: F401  (fixtures are used by name)
    SOURCES_WITH,
    browser,
    layout_problems,
    open_tab,
    page,
)

pytestmark = [pytest.mark.ui, pytest.mark.slow, pytest.mark.spark]

SPARK_WAIT = 240_000
"""ms for a Spark run on a loaded 2-core machine (the first one starts Java)."""

PANE_TEXT = """e => [...(e.shadowRoot || e).children]
    .filter(c => c.tagName !== 'STYLE' && c.tagName !== 'LINK').map(c => c.innerText).join(' ')"""
"""A Panel pane's text (that of its shadow root, without the styles)."""


def _button(pg, name: str):  # noqa: ANN001, ANN202
    """The visible button labelled exactly ``name`` (the open tab's)."""
    return pg.locator("button >> visible=true").filter(has_text=re.compile(f"^{name}$"))


def test_the_coalescing_tab_runs_on_spark(page, screenshots):  # noqa: F811
    open_tab(page, "Coalescing")
    _button(page, "Spark").click()
    page.get_by_text("Spark (eager, checkpoint 1, caught up)").wait_for(timeout=SPARK_WAIT)
    page.get_by_text("agrees with the in-process extent: yes").wait_for()
    page.locator("select >> visible=true").filter(has_text="increasing").select_option("increasing")
    page.get_by_text("New checkpoint 2: the equivalence changes").wait_for(timeout=SPARK_WAIT)
    page.get_by_text("Spark (eager, checkpoint 2, caught up)").wait_for(timeout=SPARK_WAIT)
    page.get_by_text("agrees with the in-process extent: yes").wait_for()
    # the timeline draws Spark's coalesced tuples (one bar each)
    lengths = f"() => ({SOURCES_WITH})('count').map(c => c.length)"  # the extent's tuples
    page.wait_for_function(f"() => ({lengths})().length === 1 && ({lengths})()[0] > 0")
    page.mouse.move(0, 0)  # no tooltip over the plots
    problems = layout_problems(page)
    for folder in screenshots:
        page.screenshot(path=str(folder / "5-coalescing-spark.png"), full_page=True)
    _button(page, "in-process").click()
    page.get_by_text("readings pushed (arrival order)").first.wait_for()
    assert problems == []
    assert (screenshots[0] / "5-coalescing-spark.png").stat().st_size > 10_000
    assert page.page_errors == [] and page.external_requests == []


def test_the_multiway_join_tab_runs_on_spark(page, screenshots):  # noqa: F811
    open_tab(page, "Multi-way join")
    _button(page, "Spark").click()
    # the server has taken the choice once it shows the replay's input: Run now runs on Spark
    page.get_by_text("Spark replay (s)").filter(visible=True).first.wait_for()
    _button(page, "Run").click()
    ended = page.locator(".wjoin-spark").filter(has_text=re.compile("Caught up|failed"))
    with contextlib.suppress(PlaywrightTimeout):  # the assertion below says what was shown
        ended.wait_for(timeout=SPARK_WAIT)
    readout, status = (
        page.locator(pane).evaluate(PANE_TEXT) for pane in (".wjoin-spark", ".wjoin-status")
    )
    assert "Caught up: Spark committed" in readout, f"Spark: {readout!r}; status: {status!r}"
    page.get_by_text("same results as BEW: yes").wait_for()
    page.get_by_text("tuples from 3 motes").wait_for()  # the in-process BEW and FEW ran too
    page.mouse.move(0, 0)  # no tooltip over the plots
    problems = layout_problems(page)
    for folder in screenshots:
        page.screenshot(path=str(folder / "6-multiway-spark.png"), full_page=True)
    assert problems == []
    assert (screenshots[0] / "6-multiway-spark.png").stat().st_size > 10_000
    assert page.page_errors == [] and page.external_requests == []
