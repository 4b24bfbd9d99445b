"""Run by ``panel serve --setup`` when the dashboard's server starts (``workbench dashboard``
passes it), in each of its processes: the server's start (Spark in the background, every tab
warmed, ``gc.freeze``: :func:`workbench.app.dashboard.setup_server`) happens before the server
takes its first session.  Without it the first session's page runs that start, and waits."""

from __future__ import annotations

from workbench.app.dashboard import setup_server

setup_server()
