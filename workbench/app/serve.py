"""Launch the dashboard with ``panel serve`` on the project's app file (localhost by default)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["APP_FILE", "serve"]

APP_FILE = Path(__file__).resolve().parents[2] / "apps" / "dashboard.py"


def serve(port: int = 5006, address: str = "127.0.0.1", show: bool = True) -> None:
    """Serve ``apps/dashboard.py`` until interrupted."""
    if not APP_FILE.exists():
        raise FileNotFoundError(f"dashboard app file not found: {APP_FILE}")
    cmd = [
        sys.executable,
        "-m",
        "panel",
        "serve",
        str(APP_FILE),
        "--address",
        address,
        "--port",
        str(port),
        "--allow-websocket-origin",
        f"{address}:{port}",
        "--allow-websocket-origin",
        f"localhost:{port}",
    ]
    if show:
        cmd.append("--show")
    print(f"workbench dashboard at http://{address}:{port}/dashboard", flush=True)
    try:
        subprocess.run(cmd, check=True)
    except KeyboardInterrupt:
        pass
