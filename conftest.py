"""What every test tree shares (tests/, benchmarks/tests/, the notebooks and doctests): a
hypothesis profile sized for a 2-core CI machine, the JVMs' compiler for short runs, the files
that start Spark, a server or a browser kept on one worker, and the session's one local Spark
session.  pytest reads this file for every test under the checkout: neither tree imports the
other."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,  # the first call of a NumPy path can be slow; deadlines would flake
    max_examples=int(os.environ.get("WORKBENCH_HYPOTHESIS_EXAMPLES", "150")),
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")

JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Every JVM the tests start (the Spark sessions, the standalone cluster, Spark Connect, the
dashboard servers' Spark), through ``JAVA_TOOL_OPTIONS``: the quick compiler only and one
garbage-collection thread.  A test's JVM lives a minute or two on little data, and the
optimising compiler's threads spent more CPU than they saved on the 2 cores both test workers
share (tests/test_spark_ranges.py alone: 132 -> 80 CPU-s, 78 -> 68 s).  The product's JVMs
keep Java's defaults."""
os.environ.setdefault("JAVA_TOOL_OPTIONS", JVM_OPTIONS)

ENGINE_FIXTURES = {"spark", "server", "browser", "page", "driver", "connect"}
"""Fixtures that start a JVM, a dashboard server or a browser."""
ENGINE_FILES = frozenset(
    [
        "benchmarks/tests/test_live.py",
        "benchmarks/tests/test_room_browsers.py",
        "benchmarks/tests/test_room_procs.py",
        "benchmarks/tests/test_spark_bench.py",
        "benchmarks/tests/test_spark_soak.py",
        "tests/test_app_file.py",
        "tests/test_app_live.py",
        "tests/test_app_spark_tabs.py",
        "tests/test_dashboard_spark_tabs.py",
        "tests/test_dashboard_ui.py",
        "tests/test_documented_commands.py",
        "tests/test_intel_lab.py",
        "tests/test_lab_ui.py",
        "tests/test_room.py",
        "tests/test_spark_coalesce.py",
        "tests/test_spark_damage.py",
        "tests/test_spark_exactness.py",
        "tests/test_spark_faults.py",
        "tests/test_spark_live.py",
        "tests/test_spark_live_drivers.py",
        "tests/test_spark_live_ranges.py",
        "tests/test_spark_ranges.py",
        "tests/test_spark_tab_jobs.py",
        "tests/test_spark_wjoin.py",
        "tests/test_ui_newcomer.py",
        "tests/test_uploads.py",
        "notebooks/06-spark-live-join.ipynb",
    ]
)
"""The files whose tests start Spark or a browser (every test marked ``spark`` or ``ui``, or
using one of ``ENGINE_FIXTURES``, is in one: checked at collection)."""
LOCAL_SPARK_FILES = frozenset(
    [
        "benchmarks/tests/test_live.py",
        "benchmarks/tests/test_spark_bench.py",
        "tests/test_app_live.py",
        "tests/test_app_spark_tabs.py",
        "tests/test_room.py",
        "tests/test_spark_coalesce.py",
        "tests/test_spark_damage.py",
        "tests/test_spark_exactness.py",
        "tests/test_spark_live.py",
        "tests/test_spark_live_ranges.py",
        "tests/test_spark_ranges.py",
        "tests/test_spark_tab_jobs.py",
        "tests/test_spark_wjoin.py",
    ]
)
"""The engine files that use only the session's local Spark, in-process apps included (no
cluster, server, browser or timed soak): one unit, their tests one after another, while the
first worker runs the rest of ``ENGINE_FILES``; the two units are the suite's longest."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse a Spark or browser test outside ``ENGINE_FILES`` (its module would be split
    over both workers, each starting the module's cluster, server or browser)."""
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        marked = item.get_closest_marker("spark") or item.get_closest_marker("ui")
        if path not in ENGINE_FILES and (
            marked or ENGINE_FIXTURES & set(getattr(item, "fixturenames", ()))
        ):
            raise pytest.UsageError(
                f"{item.nodeid} starts Spark or a browser: add {path} to ENGINE_FILES in "
                "conftest.py"
            )


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Two xdist workers (``./dev test``): the files of ``ENGINE_FILES`` go, whole and in one
    work unit, to one worker, which runs them one after another (never two clusters, servers
    or browsers at once: on 2 cores two of them together have timed out); those of
    ``LOCAL_SPARK_FILES`` form a second unit, and every other test is a unit of its own, for
    the other worker.  (xdist's own ``loadgroup`` does not group under pytest 9.2: it renames
    ``item._nodeid``, which pytest no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    class EngineFilesTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path in LOCAL_SPARK_FILES:
                return "local spark"
            return "engine" if path in ENGINE_FILES else nodeid

    return EngineFilesTogether(config, log)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session shared by every Spark test (Java 17+ is checked by ./dev)."""
    from workbench.spark import spark_session

    session = spark_session("local[2]", app_name="workbench-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
