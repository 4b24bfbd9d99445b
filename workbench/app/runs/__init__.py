"""The dashboard's runs on Spark, run side: what a tab's page starts, paces, samples and stops,
kept off the server's thread (the queries they run are :mod:`workbench.spark`'s).

- :mod:`~workbench.app.runs.worker`: one worker thread per run, results handed back in order;
- :mod:`~workbench.app.runs.slots`: at most ``WORKBENCH_SPARK_SLOTS`` runs at once per server;
- :mod:`~workbench.app.runs.replay`: what every run shares (:class:`~workbench.app.runs.replay.
  ReplayJob`: a replay into a folder, its Spark slot, its generations, its
  :class:`~workbench.app.runs.replay.Snapshot`);
- :mod:`~workbench.app.runs.live`, :mod:`~workbench.app.runs.coalesce`,
  :mod:`~workbench.app.runs.wjoin`: the Live join, Coalescing and Multi-way join tabs' runs.

The page side is :mod:`workbench.app.spark_control`.  Nothing is imported here: the three runs
load PySpark, and a page imports them at its first Start.
"""
