"""A newcomer's first live join, in real headless Chromium on the served dashboard: their own
CSV (written here), every setting left at its default, Start, pairs, the end of the replay.

The server, browser, page and screenshot fixtures are those of ``test_dashboard_ui``.
"""

from __future__ import annotations

import pytest
from test_dashboard_ui import (  # noqa: F401  (fixtures are used by name)
    PAIRS,
    browser,
    layout_problems,
    open_tab,
    page,
)

from harness.live_cases import newcomer_csv

pytestmark = [pytest.mark.ui, pytest.mark.spark]

SHOT = "newcomer-live-finished.png"
PAIRS_SHOT = "newcomer-live-pairs.png"


def _box(locator) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None, f"{locator} is not on screen"
    return box


def test_a_newcomer_replays_their_csv_at_the_defaults(page, screenshots, tmp_path):  # noqa: F811
    csv = tmp_path / "my-sensors.csv"
    csv.write_bytes(newcomer_csv())
    open_tab(page, "Live join (Spark)")
    page.locator("select").filter(has_text="CSV file").select_option(label="CSV file")
    page.locator("input[type=file]").set_input_files(str(csv))
    # read at once, before Start: what was accepted, and d from the learned templates
    page.get_by_text("2,000 of 2,000 rows accepted.").wait_for()
    page.get_by_text("the fast path applies").wait_for()
    d = page.get_by_label("window d (ms)")
    assert float(d.input_value().replace(",", "")) == 11_000  # templates about 10 s wide
    speed = page.get_by_label("speed (x real time)")  # the only setting changed: a short replay
    speed.fill("5000")
    speed.press("Enter")

    start, pause, stop = (
        page.get_by_role("button", name=name, exact=True) for name in ("Start", "Pause", "Stop")
    )
    boxes = [_box(b) for b in (start, pause, stop)]  # one row, left of the message box
    assert len({round(b["y"]) for b in boxes}) == 1
    assert boxes[-1]["x"] + boxes[-1]["width"] <= _box(page.locator(".live-status").first)["x"]
    start.click()
    page.get_by_text("s since Start)").wait_for(timeout=60_000)  # starting shows progress
    page.wait_for_function(f"() => ({PAIRS})() > 0", timeout=180_000)
    page.get_by_text("Finished: all 2,000 events replayed and joined").wait_for(timeout=180_000)
    assert page.evaluate(PAIRS) > 100
    assert start.is_enabled() and pause.is_disabled() and stop.is_disabled()
    page.get_by_text("Live join (finished): CSV: 2,000 readings of 2 sensors").wait_for()
    problems = layout_problems(page)
    for folder in screenshots:
        page.screenshot(path=str(folder / SHOT))
    page.locator("table.read-table").first.scroll_into_view_if_needed()  # the latest pairs
    page.get_by_text("A detected").first.wait_for()
    for folder in screenshots:
        page.screenshot(path=str(folder / PAIRS_SHOT))
    assert problems == []
    assert all((screenshots[0] / name).stat().st_size > 10_000 for name in (SHOT, PAIRS_SHOT))
    assert page.page_errors == [] and page.external_requests == []
