"""Shared test settings: a hypothesis profile sized for a 2-core CI machine."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,  # the first call of a NumPy path can be slow; deadlines would flake
    max_examples=int(os.environ.get("WORKBENCH_HYPOTHESIS_EXAMPLES", "150")),
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")
