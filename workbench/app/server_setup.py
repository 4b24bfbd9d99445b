"""Run once by ``panel serve --setup`` when the dashboard server starts: the shared Spark
session (:func:`workbench.spark.session.shared_session`) starts in a background thread, so
Java is up by the time a user presses Start in the live tab (unless
``WORKBENCH_SPARK_AT_START`` is no).  Without Java or PySpark the page still loads; the live
tab says why Spark cannot start when Start is pressed.  Then every tab is built and rendered
once (:func:`~workbench.app.dashboard.warm_tabs`) before the server takes its first session,
and the objects made so far (imports, caches, warm tabs) are frozen out of the garbage
collector's full passes (``gc.freeze``): a full pass over them stopped every session for
0.2-0.5 s, several times a minute in a room of eight.  The ``workbench`` log goes to the server's
output (stderr, INFO): it says when the tabs and when Spark are warm."""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger("workbench")
if not log.handlers:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # once: not again through the server's root handler

from workbench.config import ENV, settings  # noqa: E402 (after the log's set-up)

try:
    from workbench.spark.live import start_shared_session
except ImportError as exc:  # pyspark missing: the analytical tabs still work
    log.warning("Spark not started in the background: %s", exc)
else:
    if settings().spark_at_start:
        start_shared_session()
    else:
        log.info("Spark starts at the first Spark run (%s is no)", ENV["spark_at_start"])

from workbench.app.dashboard import TABS_WARM, warm_tabs  # noqa: E402 (after the log's set-up)

start = time.perf_counter()
took = sorted(warm_tabs().items(), key=lambda item: -item[1])
gc.collect()  # what is garbage now is not frozen
gc.freeze()
log.info(
    "%s after %.1f s (slowest: %s); %d objects frozen",
    TABS_WARM,
    time.perf_counter() - start,
    ", ".join(f"{name} {seconds:.2f} s" for name, seconds in took[:3]),
    gc.get_freeze_count(),
)
