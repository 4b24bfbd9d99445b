"""The Spark section of a tab that can run on Spark (Coalescing, Multi-way join): the tab's
status pane over two charts of the run's micro-batches (records read, duration), shown while
the tab runs on Spark.  Its charts are made when Spark is first chosen: an in-process page
holds no Spark plot."""

from __future__ import annotations

import holoviews as hv
import panel as pn
import param

from workbench.app.panes import plot
from workbench.app.spark_control import ReplayControl
from workbench.viz.live import batch_spikes

__all__ = ["SparkSection"]


class SparkSection(pn.viewable.Viewer):
    """``status`` and the micro-batch charts of ``control``'s run, while it runs on Spark."""

    control = param.ClassSelector(class_=ReplayControl, doc="The tab's run on Spark.")
    status = param.ClassSelector(class_=pn.viewable.Viewable, doc="The run's status pane.")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._section = pn.Column(visible=False, sizing_mode="stretch_width")
        self._show()

    @param.depends("control.shown")
    def rows_view(self) -> hv.Spikes:
        """Records the Spark query read per micro-batch, over time since Spark was chosen."""
        title = f"{self.control.unit} read per micro-batch"
        return batch_spikes(self.control.metrics(), "input_rows", title, "#1f77b4")

    @param.depends("control.shown")
    def duration_view(self) -> hv.Spikes:
        """How long each micro-batch took."""
        return batch_spikes(
            self.control.metrics(), "batch_ms", "micro-batch duration", "#ff7f0e", duration=True
        )

    @param.depends("control.run_on", watch=True)
    def _show(self) -> None:
        on = self.control.run_on == "Spark"
        if on and not self._section.objects:
            charts = [
                plot(hv.DynamicMap(v), sizing_mode="stretch_width", height=220)
                for v in (self.rows_view, self.duration_view)
            ]
            self._section.objects = [self.status, pn.Row(*charts, sizing_mode="stretch_width")]
        self._section.visible = on

    def __panel__(self) -> pn.Column:
        return self._section
