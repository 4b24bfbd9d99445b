"""A dashboard server for the tests and the benchmarks' rooms: started on a free loopback port,
ended with every process it started; the label that says each tab is ready; the page's data
signature (a script in ``data_signature.js``)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from workbench.config import ENV
from workbench.spark.cluster import free_port
from workbench.spark.session import SPARK_WARM

__all__ = [
    "DATA_SIGNATURE",
    "READY",
    "chromium",
    "dashboard_server",
    "end_group",
    "free_port",
    "headless_shell",
    "serving",
    "serving_process",
]

READY = {
    "Templates": "Edit a template",
    "Satisfaction probability": "partner pi (ms)",
    "Partition regions": "base event a_i",
    "Timing joins": "lazy: max_pending",
    "Live join (Spark)": "speed (x real time)",
    "Coalescing": "weight: scan",
    "Multi-way join": "temperature band (C)",
    "Deployment (simulated)": "quantum (C)",
    "Whole month": "window d (ms)",
}
"""A label each tab shows once rendered."""
DATA_SIGNATURE = Path(__file__).with_name("data_signature.js").read_text()
"""Every data source's columns: their lengths, first values and sums of their finite numbers,
which change when any plot gets new data (what a test checks; a session waiting on it would
spend its CPU hashing every model)."""


def chromium() -> str | None:
    """The Chromium executable on PATH (Debian's ``chromium``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def headless_shell() -> str | None:
    """The browser a room's sessions run: Debian's ``chromium-headless-shell`` (Chromium's old
    headless mode, what Playwright runs for headless tests: a page load costs it about half the
    CPU of the full browser, which on a shared machine is CPU the server does not get), else
    :func:`chromium`."""
    return shutil.which("chromium-headless-shell") or chromium()


def end_group(proc: subprocess.Popen) -> None:
    """End a process started in a session of its own (``start_new_session``) and everything
    it started: SIGTERM to its group, SIGKILL to what is left after 5 s."""
    group = proc.pid
    with suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)  # anyone left in the group?
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        with suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    proc.wait()


def serving_process(server: subprocess.Popen, client: tuple[str, int]) -> int:
    """The pid of the server's process (``server`` or one it forked: ``--procs``) at the other
    end of the TCP connection from ``client`` (address, port): the process that accepted it,
    which serves the Bokeh session on it."""
    import psutil

    root = psutil.Process(server.pid)
    for proc in [root, *root.children(recursive=True)]:
        with suppress(psutil.NoSuchProcess):
            if any(c.raddr and tuple(c.raddr) == client for c in proc.net_connections("tcp")):
                return proc.pid
    raise LookupError(f"no process of the server {server.pid} is connected to {client}")


@contextmanager
def serving(
    log: Path, cmd: Sequence[str], url: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen]:
    """Run ``cmd``, a server, its output in ``log``, until the page at ``url`` answers: yields
    the server process, ended with everything it started afterwards."""
    with open(log, "wb") as out:
        server = subprocess.Popen(
            list(cmd),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the launcher and its server: one group to end
            env={**os.environ, **(env or {})},
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url, timeout=60) as page:
                    if page.status == 200:
                        break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{url} did not start: {log.read_text()!r}") from None
                time.sleep(0.2)  # polling the server's socket
        yield server
    finally:
        end_group(server)


@contextmanager
def dashboard_server(
    log: Path,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    warm: bool = False,
    procs: int = 1,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``workbench dashboard`` (with ``args``, on ``procs`` processes) on a free localhost
    port, its output in ``log``: yields the page's URL and the server process (``panel
    serve``: the launcher execs it), ended with everything it started afterwards; ``warm``:
    not before every process's background Spark warm-up has ended (its log says so, or that
    Spark did not start)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/dashboard"
    cmd = [sys.executable, "-m", "workbench.cli", "dashboard", "--port", str(port), *args]
    env = {**(env or {}), ENV["server_procs"]: str(procs)}

    def warmed() -> int:
        text = log.read_text()
        return text.count(SPARK_WARM) + text.count("Spark did not start")

    with serving(log, cmd, url, env) as server:
        deadline = time.monotonic() + 300
        while warm and warmed() < procs:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Spark did not warm up: {log.read_text()!r}")
            time.sleep(0.5)  # polling the server's log
        yield url, server
