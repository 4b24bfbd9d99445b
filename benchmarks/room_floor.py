"""The room's floor: the same walk (``./dev bench room --floor``) against the least page
Panel and Bokeh serve with the dashboard's tabs, so a room's figures read against what the
libraries and the browsers themselves cost on the machine.

Each tab of the floor page holds one figure (one line of 200 points, the dashboard's tools),
four sliders and one sentence; its first slider redraws the line, and the tab's ready label
(:data:`harness.server.READY`) names that slider.  Nothing is computed: what a session
waits there is what a served Panel page costs at the least.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.server import free_port, serving

__all__ = ["FLOOR_APP", "floor_server"]

FLOOR_APP = Path(__file__).with_name("floor_app.py")
"""The floor page's script (``panel serve`` runs it for each session)."""


@contextmanager
def floor_server(folder: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """The floor page served on a free localhost port (its log in ``folder``):
    yields its URL and the server process."""
    port = free_port()
    cmd = [sys.executable, "-m", "panel", "serve", str(FLOOR_APP), "--address", "127.0.0.1"]
    cmd += ["--port", str(port), "--allow-websocket-origin", f"127.0.0.1:{port}"]
    url = f"http://127.0.0.1:{port}/floor_app"
    checkout = str(FLOOR_APP.parents[1])  # the page imports harness from the checkout
    path = os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p)
    with serving(folder / "floor.txt", cmd, url, env={"PYTHONPATH": path}) as server:
        yield url, server
