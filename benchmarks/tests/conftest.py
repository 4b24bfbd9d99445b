"""The benchmarks' tests run as the test suite's do (tests/conftest.py): the same hypothesis
profile and JVM options, the one local Spark session, and the hooks that keep every file that
starts Spark, a server or a browser on one worker (its ``ENGINE_FILES`` name these files too).
"""

from __future__ import annotations

from tests.conftest import (  # noqa: F401  pytest finds a conftest's fixtures and hooks by name
    pytest_collection_modifyitems,
    pytest_xdist_make_scheduler,
    spark,
)
