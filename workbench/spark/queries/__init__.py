"""What runs in Spark: the queries and jobs, each the workbench's own operator or extent inside
Spark's tasks (the rest of :mod:`workbench.spark` starts sessions and clusters, reads their
progress and submits these jobs).

- :mod:`~workbench.spark.queries.source`: replay files as a stream, every record accepted or
  rejected for a named reason; the sinks' folders;
- :mod:`~workbench.spark.queries.ranges`: time ranges, the operators inside Spark's tasks;
  :mod:`~workbench.spark.queries.batch`: a bounded input joined by them;
- :mod:`~workbench.spark.queries.live`: the live timing join, steered while it runs; its
  parameters (:mod:`~workbench.spark.queries.live_params`), its ranges in Spark's state
  (:mod:`~workbench.spark.queries.live_ranges`), its sink
  (:mod:`~workbench.spark.queries.live_sink`) and its damaged state
  (:mod:`~workbench.spark.queries.damage`);
- :mod:`~workbench.spark.queries.wjoin`: the multi-way window join;
- :mod:`~workbench.spark.queries.coalesce`: temporal coalescing, eager
  (:mod:`~workbench.spark.queries.coalesce_eager`) and lazy
  (:mod:`~workbench.spark.queries.coalesce_lazy`) over what they share
  (:mod:`~workbench.spark.queries.coalesce_base`), and a bounded input's
  (:mod:`~workbench.spark.queries.coalesce_batch`).

Nothing is imported here: each module loads PySpark.
"""
