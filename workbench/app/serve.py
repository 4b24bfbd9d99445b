"""Launch the dashboard with ``panel serve`` (localhost by default) on its app file: a source
checkout's ``apps/dashboard.py``, else (installed from a wheel) the package's module
(:func:`app_file`); both serve the one page, :func:`workbench.app.dashboard.serve_page`.

Binding an address other than loopback exposes the page to the network; it needs explicit
websocket origins (:func:`check_exposure`), and is announced with a warning (:data:`EXPOSED`).
The upload limit (``WORKBENCH_MAX_UPLOAD_MB``) also sizes the websocket's message limit
(:func:`websocket_max_message_bytes`), so that a file above the limit reaches the page, which
refuses it with a message, instead of the connection being dropped.
"""

from __future__ import annotations

import ipaddress
import math
import os
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = [
    "EXPOSED",
    "PACKAGE_APP",
    "app_file",
    "check_exposure",
    "disconnect_message",
    "is_loopback",
    "once_per_process",
    "serve",
    "serve_command",
    "websocket_max_message_bytes",
]

PACKAGE_APP = Path(__file__).resolve().with_name("dashboard.py")
"""The package's served module, :mod:`workbench.app.dashboard`: it builds the page when served
(what a wheel serves, having no ``apps/``)."""
SETUP_FILE = Path(__file__).resolve().parent / "server_setup.py"
"""Run at server start (``--setup``), in each process: Spark starts in the background and the
tabs warm up (:func:`~workbench.app.dashboard.setup_server`)."""
EXPOSED = (
    "WARNING: the dashboard at {url} is reachable from the network, not only from this "
    "machine. It has no authentication: anyone who can reach it (from the allowed origins "
    "{origins}) can run Spark jobs on this machine and read the data folder {data}. Serve it "
    "only on a network you trust, or behind a proxy that authenticates."
)
"""The warning printed (stderr) when the dashboard binds a non-loopback address."""
CHECK_UNUSED_MS = 2000
"""How often the server looks for sessions whose browser went away (Bokeh: every 17 s); one
unused for 15 s ends, and with it its Spark run, which frees its slot."""
UPLOAD_HEADROOM = 1.5
"""The websocket accepts files up to this multiple of the upload limit, so a file somewhat
above the limit still reaches the page and gets its message (a larger one drops the
connection: Tornado closes a websocket whose message is too big, code 1009)."""


def app_file() -> Path:
    """The file ``panel serve`` runs: ``apps/dashboard.py`` of the source checkout the package
    runs from (:func:`workbench.config.checkout`), else :data:`PACKAGE_APP`."""
    from workbench.config import checkout

    root = checkout()
    if root is not None and (root / "apps" / "dashboard.py").is_file():
        return root / "apps" / "dashboard.py"
    return PACKAGE_APP


_STARTING = threading.Lock()
_STARTED = threading.Event()


def once_per_process(start: Callable[[], None]) -> None:
    """Run the server's ``start`` (:func:`workbench.app.dashboard.setup_server`) unless it has
    run in this process; a caller meanwhile waits for it.  The state lives here, in a module
    imported once per process: ``panel serve`` runs a served module (the package's dashboard,
    from a wheel) as a fresh copy for each session, whose own state would be new each time."""
    with _STARTING:
        if not _STARTED.is_set():
            start()
            _STARTED.set()


def websocket_max_message_bytes(max_upload_mb: float) -> int:
    """The websocket message limit for an upload limit: a file is sent base64-encoded (4/3 of
    its size) in a JSON message, so 4/3 of :data:`UPLOAD_HEADROOM` times the limit, plus 1 MB
    for the message around it; never below Bokeh's default (20 MB).

    >>> websocket_max_message_bytes(50) // 2**20
    101
    """
    encoded = math.ceil(max_upload_mb * 2**20 * UPLOAD_HEADROOM * 4 / 3)
    return max(encoded + 2**20, 20 * 2**20)


def disconnect_message(max_upload_mb: float) -> str:
    """What a page says when its connection to the server drops: an upload too large for the
    websocket (:func:`websocket_max_message_bytes`) closes it before the page's size check
    can answer.

    >>> disconnect_message(50)[:90]
    'The connection to the server was lost. An upload larger than about 75 MB closes it (the li'
    """
    dropped = (websocket_max_message_bytes(max_upload_mb) - 2**20) * 3 / 4 / 2**20
    return (
        "The connection to the server was lost. An upload larger than about "
        f"{dropped:.0f} MB closes it (the limit is {max_upload_mb:g} MB, "
        "WORKBENCH_MAX_UPLOAD_MB); otherwise the server stopped. Reload the page."
    )


def is_loopback(address: str) -> bool:
    """Whether binding ``address`` keeps the server on this machine (127.x.x.x, ::1 or
    localhost); an empty address or 0.0.0.0 binds every interface.

    >>> [is_loopback(a) for a in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "10.1.2.3", "")]
    [True, True, True, False, False, False]
    """
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip()).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def check_exposure(address: str, port: int, allow_websocket_origin: Sequence[str]) -> str:
    """The warning to print before serving on ``address`` ("" on loopback).  A non-loopback
    address without explicit websocket origins is a ValueError saying what to add: which
    browsers' pages may connect is the user's choice, never guessed."""
    if is_loopback(address):
        return ""
    if not allow_websocket_origin:
        raise ValueError(
            f"--address {address} makes the dashboard reachable from the network, without "
            "authentication: give the origins whose pages may connect with "
            f"--allow-websocket-origin HOST:PORT (for example {_host(address)}:{port}), "
            "repeatable; or keep the default address 127.0.0.1"
        )
    from workbench.config import settings

    return EXPOSED.format(
        url=f"http://{_host(address)}:{port}/dashboard",
        origins=", ".join(allow_websocket_origin),
        data=settings().cache_dir,
    )


def _host(address: str) -> str:
    """How a URL names the bound address."""
    if address in ("", "0.0.0.0", "::"):  # every interface: the machine's name reaches it
        return socket.gethostname()
    return f"[{address}]" if ":" in address else address


def serve_command(
    port: int = 5006,
    address: str = "127.0.0.1",
    allow_websocket_origin: Sequence[str] = (),
    show: bool = False,
    max_upload_mb: float | None = None,
) -> list[str]:
    """The ``panel serve`` command line; websocket origins default to the bound address (only
    on loopback: elsewhere they must be given, :func:`check_exposure`); the websocket message
    limit follows the upload limit (``max_upload_mb``, None: the configured one); the setup
    script starts Spark in the background; the configured server processes
    (``WORKBENCH_SERVER_PROCS``) become ``--num-procs``."""
    from workbench.config import settings

    check_exposure(address, port, allow_websocket_origin)
    config = settings()
    if max_upload_mb is None:
        max_upload_mb = config.max_upload_mb
    origins = list(allow_websocket_origin) or [f"{address}:{port}", f"localhost:{port}"]
    cmd = [sys.executable, "-m", "panel", "serve", str(app_file()), "--address", address]
    cmd += ["--setup", str(SETUP_FILE)]
    cmd += ["--port", str(port)]
    for origin in origins:
        cmd += ["--allow-websocket-origin", origin]
    cmd += ["--websocket-max-message-size", str(websocket_max_message_bytes(max_upload_mb))]
    cmd += ["--check-unused-sessions", str(CHECK_UNUSED_MS)]
    if config.server_procs > 1:
        cmd += ["--num-procs", str(config.server_procs)]
    if show:
        cmd.append("--show")
    return cmd


def serve(
    port: int = 5006,
    address: str = "127.0.0.1",
    show: bool = True,
    allow_websocket_origin: Sequence[str] = (),
    max_upload_mb: float | None = None,
) -> None:
    """Serve the dashboard until interrupted: this process becomes ``panel serve``, so
    stopping it stops the server (no orphaned child).  A non-loopback address without
    origins is refused (ValueError); with them, the exposure warning goes to stderr."""
    warning = check_exposure(address, port, allow_websocket_origin)
    cmd = serve_command(port, address, allow_websocket_origin, show, max_upload_mb)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    print(f"workbench dashboard at http://{_host(address)}:{port}/dashboard", flush=True)
    os.execv(cmd[0], cmd)
