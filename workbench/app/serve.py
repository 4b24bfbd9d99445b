"""Launch the dashboard with ``panel serve`` on the package's app module (localhost by default)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["APP_FILE", "serve", "serve_command"]

APP_FILE = Path(__file__).resolve().with_name("dashboard.py")
"""The served file: :mod:`workbench.app.dashboard`, which builds the page when served."""
SETUP_FILE = Path(__file__).resolve().parent / "server_setup.py"
"""Run once at server start (``--setup``): Spark starts in the background."""


def serve_command(
    port: int = 5006,
    address: str = "127.0.0.1",
    allow_websocket_origin: Sequence[str] = (),
    show: bool = False,
) -> list[str]:
    """The ``panel serve`` command line; websocket origins default to the bound address; the
    setup script starts Spark in the background."""
    origins = list(allow_websocket_origin) or [f"{address}:{port}", f"localhost:{port}"]
    cmd = [sys.executable, "-m", "panel", "serve", str(APP_FILE), "--address", address]
    cmd += ["--setup", str(SETUP_FILE)]
    cmd += ["--port", str(port)]
    for origin in origins:
        cmd += ["--allow-websocket-origin", origin]
    if show:
        cmd.append("--show")
    return cmd


def serve(
    port: int = 5006,
    address: str = "127.0.0.1",
    show: bool = True,
    allow_websocket_origin: Sequence[str] = (),
) -> None:
    """Serve the dashboard until interrupted: this process becomes ``panel serve``, so
    stopping it stops the server (no orphaned child)."""
    cmd = serve_command(port, address, allow_websocket_origin, show)
    print(f"workbench dashboard at http://{address}:{port}/dashboard", flush=True)
    os.execv(cmd[0], cmd)
