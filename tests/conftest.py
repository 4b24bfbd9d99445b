"""Shared test settings: a hypothesis profile sized for a 2-core CI machine."""

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


@pytest.fixture(scope="session")
def spark():
    """One local Spark session shared by every Spark test (Java 17+ is checked by ./dev)."""
    from workbench.spark import spark_session

    session = spark_session("local[2]", app_name="workbench-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
