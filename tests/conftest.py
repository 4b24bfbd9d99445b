"""The test suite's own fixtures: the dashboard served once for the browser tests, and the
screenshot folders (what every test tree shares is the checkout's top-level conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The dashboard served by the project's launcher on a free localhost port, one for every
    browser test that needs the default server (each opens its own page: its own session);
    at the end, its log holds no error from Panel and no deprecation warning.

    Its output goes to a file: Spark's JVM logs there too, and a pipe nobody reads would fill
    up and block the server."""
    from harness.server import dashboard_server

    log = tmp_path_factory.mktemp("server") / "stderr.txt"
    with dashboard_server(log) as (url, _):
        yield url
    # a session's callback that failed is logged by Panel, the page going on as if nothing
    # happened: the tests' pages then pass on what they saw
    lines = log.read_text().splitlines()
    failed = [line for line in lines if "ERROR: panel" in line]
    assert failed == [], f"the served dashboard logged errors: {failed}"
    # nor deprecations (pyspark's workers printed one per micro-batch: WORKER_WARNINGS)
    warned = sorted({line for line in lines if "FutureWarning" in line})
    assert warned == [], f"the served dashboard logged deprecations: {warned}"


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> list[Path]:
    """Folders receiving screenshots: the session's, and WORKBENCH_SCREENSHOTS if set."""
    folders = [tmp_path_factory.mktemp("screenshots")]
    if os.environ.get("WORKBENCH_SCREENSHOTS"):
        folders.append(Path(os.environ["WORKBENCH_SCREENSHOTS"]))
        folders[-1].mkdir(parents=True, exist_ok=True)
    return folders
