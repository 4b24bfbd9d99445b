"""Run once by ``panel serve --setup`` when the dashboard server starts: the shared Spark
session (:func:`workbench.spark.session.shared_session`) starts in a background thread, so
Java is up by the time a user presses Start in the live tab.  Without Java or PySpark the
page still loads; the live tab says why Spark cannot start when Start is pressed.  The
``workbench`` log goes to the server's output (stderr, INFO): it says when Spark is warm."""

from __future__ import annotations

import logging

log = logging.getLogger("workbench")
if not log.handlers:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)

try:
    from workbench.spark.session import start_shared_session
except ImportError as exc:  # pyspark missing: the analytical tabs still work
    log.warning("Spark not started in the background: %s", exc)
else:
    start_shared_session()
