"""Shared test settings: a hypothesis profile sized for a 2-core CI machine; the session's
Spark session, dashboard server and screenshot folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,  # the first call of a NumPy path can be slow; deadlines would flake
    max_examples=int(os.environ.get("WORKBENCH_HYPOTHESIS_EXAMPLES", "150")),
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")

ENGINE_FIXTURES = {"spark", "server", "browser", "page", "driver", "connect"}
"""Fixtures that start a JVM, a dashboard server or a browser."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n 2 --dist loadgroup`` (``./dev test``), the tests that run Spark or a
    browser, or use a fixture that starts one, form one group: one worker runs them one at a
    time (each already uses both cores) while the other takes the in-process tests, the
    doctests and the notebooks."""
    for item in items:
        marked = item.get_closest_marker("spark") or item.get_closest_marker("ui")
        if marked or ENGINE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("engines"))


@pytest.fixture(scope="session")
def spark():
    """One local Spark session shared by every Spark test (Java 17+ is checked by ./dev)."""
    from workbench.spark import spark_session

    session = spark_session("local[2]", app_name="workbench-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The dashboard served by the project's launcher on a free localhost port, one for every
    browser test that needs the default server (each opens its own page: its own session).

    Its output goes to a file: Spark's JVM logs there too, and a pipe nobody reads would fill
    up and block the server."""
    from tests.support.server import dashboard_server

    with dashboard_server(tmp_path_factory.mktemp("server") / "stderr.txt") as (url, _):
        yield url


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> list[Path]:
    """Folders receiving screenshots: the session's, and WORKBENCH_SCREENSHOTS if set."""
    folders = [tmp_path_factory.mktemp("screenshots")]
    if os.environ.get("WORKBENCH_SCREENSHOTS"):
        folders.append(Path(os.environ["WORKBENCH_SCREENSHOTS"]))
        folders[-1].mkdir(parents=True, exist_ok=True)
    return folders
