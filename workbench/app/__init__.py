"""Dashboard state and wiring: param/Viewer classes, unit-testable without a browser."""

from __future__ import annotations

from workbench.app.deployment import DeploymentExplorer
from workbench.app.ptjoin import PTJoinExplorer

__all__ = ["DeploymentExplorer", "PTJoinExplorer"]
