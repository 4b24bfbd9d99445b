"""Dashboard state and wiring: param/Viewer classes, unit-testable without a browser."""

from __future__ import annotations

from workbench.app.coalescing import CoalescingExplorer
from workbench.app.dashboard import build_dashboard, dashboard_tabs
from workbench.app.deployment import DeploymentExplorer
from workbench.app.live import LiveJoinExplorer
from workbench.app.month import MonthExplorer
from workbench.app.ptjoin import PTJoinExplorer
from workbench.app.race import TimingJoinsExplorer
from workbench.app.regions import PartitionRegions
from workbench.app.templates import TemplateEditor
from workbench.app.wjoin import WJoinExplorer

__all__ = [
    "CoalescingExplorer",
    "DeploymentExplorer",
    "LiveJoinExplorer",
    "MonthExplorer",
    "PTJoinExplorer",
    "PartitionRegions",
    "TemplateEditor",
    "TimingJoinsExplorer",
    "WJoinExplorer",
    "build_dashboard",
    "dashboard_tabs",
]
