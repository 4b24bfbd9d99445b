"""``./dev lab`` in real headless Chromium: JupyterLab opens a notebook, runs all its cells, and
its plots and inline app render without one request leaving localhost or failing.

Debian's ``chromium`` through Playwright's ``executable_path``.  JupyterLab's config, settings,
workspaces and runtime files go to a temporary folder; the server's own news and update checks
are turned off on its command line (they would be the server's requests, not the page's, but a
lab started for a test has no business on the internet).  Screenshots go to the session's
temporary folder and, when ``WORKBENCH_SCREENSHOTS`` names a folder, there too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_dashboard_ui import (  # noqa: F401  (fixtures are used by name)
    CHROMIUM,
    _free_port,
    browser,
)

from harness.server import end_group

pytestmark = [pytest.mark.ui, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "02-partitions.ipynb"  # quick to run, plots, and an inline app (Partition regions)
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
LOCAL_SCHEMES = {"data", "blob", "about"}

# every code cell: its prompt ("[3]:" once run, "[*]:" while running) and whether it shows an
# error (a traceback: JupyterLab renders it with the stderr MIME type and an ``ename`` line)
CELLS = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell')).map(c => ({
  prompt: (c.querySelector('.jp-InputArea-prompt') || {}).textContent || '',
  errors: Array.from(c.querySelectorAll(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
  )).map(o => o.textContent.slice(0, 400)),
}))"""
DONE = f"""() => {{
  const cells = ({CELLS})();
  const status = document.querySelector('.jp-Notebook-ExecutionIndicator');
  return cells.length > 0 && cells.every(c => /\\[\\d+\\]/.test(c.prompt))
    && (!status || status.getAttribute('data-status') === 'idle');
}}"""
BOKEH = """() => {
  if (!window.Bokeh || !Bokeh.documents) return {documents: 0, canvases: 0};
  let canvases = 0;
  const walk = (root) => {
    canvases += root.querySelectorAll('canvas').length;
    for (const n of root.querySelectorAll('*')) if (n.shadowRoot) walk(n.shadowRoot);
  };
  walk(document);
  return {documents: Bokeh.documents.length, canvases};
}"""


def _request(url: str, method: str = "GET", body: dict | None = None) -> bytes:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.read()


def _end_lab(proc: subprocess.Popen, base: str, token: str) -> None:
    """Shut the lab down through its API (that also ends its kernels, which Jupyter starts in
    sessions of their own), then end the launcher's process group."""
    with contextlib.suppress(OSError):
        _request(f"{base}/api/shutdown?token={token}", method="POST")
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
    end_group(proc)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """``./dev lab`` on a free localhost port with a random token; yields (url, token)."""
    if CHROMIUM is None:
        pytest.skip("chromium not found on PATH (./dev installs Debian's chromium as root)")
    home = tmp_path_factory.mktemp("lab")
    settings = home / "settings"
    # every cell in the page's DOM (the test sees every cell's prompt and output), and the
    # notebook's kernel started without a "Select Kernel" dialog
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none", "autoStartDefaultKernel": True}))
    # no "Would you like to get notified about official Jupyter news?" over the screenshot
    notification = (
        settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    )
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    # the lab serves the checkout's notebooks/: it must not save the run notebook over it
    docmanager = settings / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
    docmanager.parent.mkdir(parents=True)
    docmanager.write_text(json.dumps({"autosave": False}))
    env = os.environ | {
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
    }
    port, token = _free_port(), secrets.token_urlsafe(16)
    log = home / "lab.txt"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                str(REPO / "dev"),
                "lab",
                "--no-browser",
                f"--port={port}",
                f"--IdentityProvider.token={token}",
                "--LabApp.news_url=None",  # the server's news feed fetch
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # ./dev, jupyter lab: one group to end
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90  # ./dev may first (re)install the project
    while True:
        try:
            _request(f"{base}/api/status?token={token}")
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                _end_lab(proc, base, token)
                raise RuntimeError(f"./dev lab did not start: {log.read_text()!r}") from None
            time.sleep(0.2)  # polling the server's socket, not waiting on a page
    try:
        # the notebook's kernel, started before the page opens: the page joins this session
        # (left to itself, a fresh lab once started two kernels and shut one down while it
        # started, answering the page's channels request with a 500)
        _request(
            f"{base}/api/sessions?token={token}",
            method="POST",
            body={"path": NOTEBOOK, "type": "notebook", "name": "", "kernel": {"name": "python3"}},
        )
        yield base, token
    finally:
        _end_lab(proc, base, token)


def _wait_for_one_idle_kernel(page, base: str, token: str) -> None:
    """Wait until the page's kernel is idle and the only one: on opening a notebook, JupyterLab
    sometimes starts a second kernel and shuts the first down, which drops cells queued on the
    first.  Polls the server's kernel list (and the page) twice in a row, up to 60 s."""
    idle = (
        "() => { const s = document.querySelector('.jp-Notebook-ExecutionIndicator');"
        " return !!s && s.getAttribute('data-status') === 'idle'; }"
    )
    deadline, settled = time.monotonic() + 60, 0
    while settled < 2:
        kernels = json.loads(_request(f"{base}/api/kernels?token={token}"))
        one = len(kernels) == 1 and kernels[0]["execution_state"] == "idle"
        settled = settled + 1 if one and page.evaluate(idle) else 0
        assert time.monotonic() < deadline, f"no single idle kernel: {kernels}"
        page.wait_for_timeout(500)  # polling the server, as the fixture polls its socket


def _is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in LOCAL_SCHEMES or parts.hostname in LOCAL_HOSTS


def test_a_notebook_runs_in_jupyterlab_with_its_plots_and_app_offline(lab, browser, screenshots):  # noqa: F811
    base, token = lab
    notebook = (REPO / "notebooks" / NOTEBOOK).read_bytes()
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    external, failed, bad_status, page_errors = [], [], [], []

    def route(r):
        if _is_local(r.request.url):
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("requestfailed", lambda r: failed.append(f"{r.url} {r.failure}"))
    page.on(
        "response", lambda r: bad_status.append(f"{r.status} {r.url}") if r.status >= 400 else None
    )
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
        page.locator(".jp-Notebook .jp-CodeCell").first.wait_for()
        _wait_for_one_idle_kernel(page, base, token)
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        try:
            page.wait_for_function(DONE, timeout=120_000, polling=500)
        except PlaywrightTimeout:
            page.screenshot(path=str(screenshots[0] / "lab-02-partitions-timeout.png"))
            raise AssertionError(f"cells did not finish: {page.evaluate(CELLS)}") from None
        cells = page.evaluate(CELLS)
        figure = page.locator(".jp-Notebook .jp-CodeCell", has_text="view_figure(figure3")
        figure.scroll_into_view_if_needed()
        figure.locator("canvas").first.wait_for(state="visible")
        for folder in screenshots:
            page.screenshot(path=str(folder / "lab-02-partitions-figure3.png"))
        # the last cell's app: Partition regions' widgets and its plot
        app = page.locator(".jp-Notebook .jp-CodeCell").last
        app.scroll_into_view_if_needed()
        page.get_by_text("base event a_i", exact=False).first.wait_for(state="visible")
        app.locator(".noUi-handle").first.wait_for(state="visible")
        bokeh = page.evaluate(BOKEH)
        for folder in screenshots:
            page.screenshot(path=str(folder / "lab-02-partitions.png"))
    finally:
        page.close()

    assert len(cells) >= 7 and all(re.search(r"\[\d+\]", c["prompt"]) for c in cells), cells
    assert [c["errors"] for c in cells if c["errors"]] == []
    assert bokeh["documents"] >= 3 and bokeh["canvases"] >= 3, bokeh  # two figures and the app
    assert external == [], external  # blocked: none may leave localhost
    assert failed == [], failed
    assert bad_status == [], bad_status
    assert page_errors == [], page_errors
    assert (screenshots[0] / "lab-02-partitions.png").stat().st_size > 30_000
    assert (REPO / "notebooks" / NOTEBOOK).read_bytes() == notebook  # not saved over
