"""``panel serve apps/dashboard.py`` from the checkout, as a user types it (no
``workbench dashboard``): the page has every tab, fetches nothing from outside this machine,
and the server's start ran (its log says the tabs are warm and what became of Spark)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_dashboard_ui import SHOWN, browser  # noqa: F401

from workbench.app.dashboard import TAB_BUILDERS, TABS_WARM

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app file served by ``panel serve`` on a free loopback port, from the checkout's
    folder; Spark is left to the first Spark run (no JVM beside the browser on two cores; the
    server's start says so).  Yields the page's URL and the server's log."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("app-file") / "server.txt"
    command = [sys.executable, "-m", "panel", "serve", "apps/dashboard.py", "--port", str(port)]
    command += ["--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"]
    env = {**os.environ, "WORKBENCH_SPARK_AT_START": "no"}
    with open(log, "wb") as out:
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # the server and what it starts: one group to end
        )
    try:
        deadline = time.monotonic() + 120
        while not _listening(port):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)  # polling the server's socket
        yield f"http://127.0.0.1:{port}/dashboard", log
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def test_the_app_file_serves_every_tab_after_the_servers_start(browser, served):  # noqa: F811
    url, log = served
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    outside = []
    page.on(
        "request",
        lambda r: (
            None
            if r.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:"))
            else outside.append(r.url)
        ),
    )
    page.goto(url, timeout=300_000)  # the first session runs the server's start: it waits
    page.wait_for_function(SHOWN, arg="data: simulated replica", timeout=60_000)
    tabs = page.locator(".bk-tab")
    tabs.last.wait_for(state="visible")
    assert tabs.all_inner_texts() == list(TAB_BUILDERS)
    assert outside == []
    page.reload()  # another session: the server's start ran once, by the first
    page.wait_for_function(SHOWN, arg="data: simulated replica")
    text = log.read_text()
    assert text.count(TABS_WARM) == 1
    assert "Spark starts at the first Spark run (WORKBENCH_SPARK_AT_START is no)" in text
    assert outside == []
    page.close()
