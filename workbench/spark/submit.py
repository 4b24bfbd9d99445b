"""``workbench spark``: the timing joins as Spark jobs over a user's event files.

- ``prepare``: write an event folder (``streams.json`` and ``events/``) from the simulated
  deployment, its whole month, the real readings file, a sensor CSV or synthetic events
  (``--source motes``: the simulated motes' temperatures as tuples for ``coalesce``);
- ``join``: PTJoin (Section 3; tight, loose or naive probing) over an event folder;
- ``correlate``: interval timing correlation (Simple, SSort, Eager, Lazy, LazyWithLookup:
  Algorithms 1-7) over an event folder of one-bucket templates;
- ``wjoin``: the multi-way window join (BEW-join or FEW-join, W-join Section 3; windows as a
  uniform clique or a matrix, Section 5) over a folder of tuples ``stream, id, key, t,
  arrival`` (Parquet, JSON lines or CSV), equality of the key as the predicate;
- ``coalesce``: temporal coalescing (eager Algorithm 2 or lazy Algorithm 1, a time or tuple
  window, one of the value-equivalences) over a folder of tuples ``group, id, value, t,
  arrival``: the coalesced view to ``OUTPUT/extents``
  (:mod:`workbench.spark.queries.coalesce_batch`).

Each join runs the workbench's own operator per time range
(:mod:`workbench.spark.queries.ranges`) and writes ``OUTPUT/pairs`` (a W-join:
``OUTPUT/results``) and ``OUTPUT/rejects`` as Parquet.
The same module runs under ``spark-submit`` (``spark-submit .../workbench/spark/submit.py
join ...``): without ``--master`` the session is the one ``spark-submit`` configured.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from workbench.coalesce import Equivalence, Window
from workbench.coalesce.equivalence import KINDS
from workbench.data.event_files import EVENT_FORMATS, read_stream_specs, write_event_folder
from workbench.experiments.workloads import WJoinWorkload
from workbench.operators import (
    CORRELATIONS,
    BEWJoin,
    FEWJoin,
    LazyCorrelation,
    PTJoin,
    TwoStreamJoin,
    WindowConstraints,
)
from workbench.operators.wjoin import MultiWayJoin

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd
    from pyspark.sql import SparkSession

    from workbench.data.streams import ReplayedStreams

__all__ = ["PREPARE_SOURCES", "main", "parser"]

PREPARE_SOURCES = (
    "simulated",
    "month",
    "readings",
    "csv",
    "synthetic",
    "intervals",
    "motes",
    "tuples",
)
"""What ``prepare`` can write an event folder (or, ``motes`` and ``tuples``, tuple files)
from."""
TUPLES_WORKLOAD = WJoinWorkload(window_ms=40.0, keys=20, windows=250.0)
"""``--source tuples``: keys 0..19, 250 windows of 40 ms (10 s of stream time)."""
TUPLES_RATE = 600.0
"""``--source tuples``: the streams' aggregate rate (tuples/s)."""
TUPLES_DELAY_MS = 500.0
"""``--source tuples``: each tuple arrives up to this long after its timestamp (out of order)."""
TIME_UNITS = ("s", "ms", "us", "ns")
"""``--time-unit``: a CSV's numeric times counted from 1970-01-01 in this unit (none: dates)."""


def parser() -> argparse.ArgumentParser:
    """The ``workbench spark`` command line (also ``spark-submit submit.py``)."""
    top = argparse.ArgumentParser(
        prog="workbench spark", description="Timing joins as Spark jobs over event files."
    )
    sub = top.add_subparsers(dest="job", required=True)
    prep = sub.add_parser("prepare", help="write an event folder (streams.json + events/)")
    prep.add_argument("--source", choices=PREPARE_SOURCES, default="simulated")
    prep.add_argument("--path", help="the readings file or CSV (readings, csv)")
    prep.add_argument("--format", choices=EVENT_FORMATS, default="parquet")
    prep.add_argument("--output", required=True, help="the event folder to write")
    csv = prep.add_argument_group("--source csv: the CSV's columns, as the live tab asks them")
    csv.add_argument("--time-column", default="time", help="its time column (default: time)")
    csv.add_argument("--sensor-column", default="sensor", help="its sensor id (default: sensor)")
    csv.add_argument(
        "--time-unit",
        choices=TIME_UNITS,
        help="numeric times since 1970-01-01 in this unit (default: the times are dates)",
    )
    tup = prep.add_argument_group("--source tuples: W-join tuples for workbench spark wjoin")
    tup.add_argument("--streams", type=int, default=3, help="how many streams (2-6; default 3)")
    for name, text in (
        ("join", "PTJoin (Section 3) over an event folder"),
        ("correlate", "interval correlation over an event folder"),
        ("wjoin", "a W-join over tuple files"),
        ("coalesce", "temporal coalescing over tuple files"),
    ):
        job = sub.add_parser(name, help=f"{text}, results to Parquet")
        tuples = name in ("wjoin", "coalesce")
        source = "tuple files" if tuples else "event folder (streams.json, events/)"
        job.add_argument("--input", required=True, help=source)
        job.add_argument("--output", required=True, help="folder for the results and rejects/")
        job.add_argument("--master", help="local[N], spark://h:p, sc://h:p (spark-submit: omit)")
        if not tuples:
            job.add_argument("--d", type=float, required=True, help="the window d (time units)")
        job.add_argument("--json", action="store_true", help="print the run as JSON")
    join = sub.choices["join"]
    join.add_argument("--delta", type=float, required=True, help="confidence threshold")
    join.add_argument("--mode", choices=("tight", "loose", "naive"), default="tight")
    corr = sub.choices["correlate"]
    corr.add_argument("--ct", type=float, required=True, help="confidence threshold ct")
    corr.add_argument("--algorithm", choices=tuple(CORRELATIONS), default="eager")
    corr.add_argument("--max-pending", type=int, help="lazy: re-evaluate at this many waiting")
    corr.add_argument("--max-wait", type=float, help="lazy: re-evaluate after this much time")
    wj = sub.choices["wjoin"]
    windows = wj.add_mutually_exclusive_group(required=True)
    windows.add_argument("--window", type=float, help="one window for every pair of streams")
    windows.add_argument(
        "--windows", help="the window matrix, rows by ';', entries by ',' ('inf': none)"
    )
    wj.add_argument("--streams", type=int, help="how many streams (with --window)")
    wj.add_argument("--max-delay", required=True, help="each stream's D, comma-separated")
    wj.add_argument("--algorithm", choices=("bew", "few"), default="bew")
    wj.add_argument("--strategy", choices=("uniform", "gca", "lca", "modified"), help="Section 5.1")
    wj.add_argument("--implementation", choices=("nested", "hash"), default="hash")
    co = sub.choices["coalesce"]
    co.add_argument("--window", type=float, required=True, help="the window size")
    co.add_argument("--kind", choices=("time", "tuples"), default="time", help="window kind")
    co.add_argument("--equivalence", choices=tuple(KINDS), default="equal")
    co.add_argument("--tolerance", type=float, default=0.0, help="absolute, relative")
    co.add_argument("--quantum", type=float, default=1.0, help="quantized")
    co.add_argument("--max-delay", type=float, required=True, help="the tuples' delay bound D")
    co.add_argument("--scheme", choices=("eager", "lazy"), default="eager")
    return top


def _numbers(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{what} = {text!r} must be numbers separated by ','") from None


def _wjoin(args: argparse.Namespace) -> MultiWayJoin:
    """The W-join the command line asks for."""
    delays = _numbers(args.max_delay, "--max-delay")
    if args.window is not None:
        constraints = WindowConstraints.uniform(args.streams or len(delays), args.window)
    else:
        rows = [_numbers(row, "--windows") for row in args.windows.split(";")]
        constraints = WindowConstraints(rows)
    strategy = args.strategy or (
        "uniform" if constraints.form == "uniform clique" else
        "modified" if args.algorithm == "bew" else "gca"
    )  # fmt: skip
    cls = BEWJoin if args.algorithm == "bew" else FEWJoin
    return cls(
        constraints=constraints,
        max_delay=delays,
        strategy=strategy,
        implementation=args.implementation,
    )


def _prepare(args: argparse.Namespace) -> str:
    from workbench.data import streams as data

    if args.source in ("readings", "csv") and not args.path:
        raise ValueError(f"--source {args.source} needs --path")
    if args.source == "motes":
        return _prepare_motes(args.output, args.format)
    if args.source == "tuples":
        return _prepare_wjoin_tuples(args.output, args.format, args.streams)
    if args.source == "intervals":
        import numpy as np

        from workbench.experiments.workloads import IntervalWorkload

        w = IntervalWorkload(events_per_stream=20_000)
        specs, events = w.streams(np.random.default_rng(w.seed), w.rates[0])
    else:
        rep = {
            "simulated": data.default_streams,
            "month": data.month_streams,
            "readings": lambda: data.readings_file_streams(args.path),
            "csv": lambda: _csv(args),
            "synthetic": data.synthetic_streams,
        }[args.source]()
        specs, events = rep.specs(), rep.events
    folder = write_event_folder(args.output, specs, events, args.format)
    return f"{len(events):,} events of 2 streams written to {folder}"


def _csv(args: argparse.Namespace) -> ReplayedStreams:
    """The user's CSV (``--path``) read with the columns and the time unit the flags name; its
    problems said in the flags' words, the reading report printed."""
    from pathlib import Path

    from workbench.data.csv_replay import CLI_SETTINGS
    from workbench.data.streams import csv_streams

    path = Path(args.path)
    if not path.is_file():
        raise FileNotFoundError(f"--path = {args.path!r}: no such file")
    rep = csv_streams(
        path.read_bytes(),
        args.time_column,
        args.sensor_column,
        args.time_unit,
        names=CLI_SETTINGS,
        uploaded=False,
    )
    if rep.report is not None:
        print(rep.report.describe("--time-unit"), file=sys.stderr)
    return rep


def _write_tuples(tuples: pd.DataFrame, output: str, fmt: str) -> Path:
    """Tuple files (one ``tuples.*`` file in the folder ``output``) in ``fmt``; their path."""
    from pathlib import Path

    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / {"parquet": "tuples.parquet", "json": "tuples.jsonl", "csv": "tuples.csv"}[fmt]
    if fmt == "parquet":
        tuples.to_parquet(path, index=False)
    elif fmt == "json":
        tuples.to_json(path, orient="records", lines=True)
    else:
        tuples.to_csv(path, index=False, float_format="%.17g")
    return path


def _prepare_motes(output: str, fmt: str) -> str:
    """The simulated deployment's temperatures as coalescing tuples (group: the mote; ms)."""
    from workbench.data.streams import default_readings
    from workbench.spark.queries.coalesce import readings_records

    readings = default_readings()
    tuples = readings_records(readings, sorted(readings["mote"].unique()), "temperature")
    path = _write_tuples(tuples, output, fmt)
    return f"{len(tuples):,} tuples of {tuples['group'].nunique()} motes written to {path}"


def _prepare_wjoin_tuples(output: str, fmt: str, streams: int) -> str:
    """W-join tuples (``stream, id, key, t, arrival``, ms) for ``workbench spark wjoin``:
    :data:`TUPLES_WORKLOAD`'s integer streams (the W-join performance study's, Section 4),
    each tuple delayed by up to :data:`TUPLES_DELAY_MS`."""
    import numpy as np

    if not 2 <= streams <= 6:
        raise ValueError(f"--streams = {streams} must be 2 to 6 (W-join Section 2)")
    rng = np.random.default_rng(0)
    rows = TUPLES_WORKLOAD.streams(rng, streams, TUPLES_RATE)
    arrival = rows["ts"] + rng.uniform(0.0, TUPLES_DELAY_MS, len(rows))
    tuples = (
        rows.assign(arrival=arrival)
        .rename(columns={"value": "key", "ts": "t"})
        .sort_values("arrival", kind="stable", ignore_index=True)
    )
    path = _write_tuples(tuples[["stream", "id", "key", "t", "arrival"]], output, fmt)
    return f"{len(tuples):,} tuples of {streams} streams written to {path}"


def _operator(args: argparse.Namespace) -> TwoStreamJoin | MultiWayJoin:
    if args.job == "wjoin":
        return _wjoin(args)
    specs = read_stream_specs(args.input)
    if args.job == "join":
        return PTJoin(streams=specs, d=args.d, threshold=args.delta, mode=args.mode)
    cls = CORRELATIONS[args.algorithm]
    lazy = {}
    if issubclass(cls, LazyCorrelation):
        lazy = {"max_pending": args.max_pending, "max_wait": args.max_wait}
    return cls(streams=specs, d=args.d, threshold=args.ct, **lazy)


def _session(args: argparse.Namespace) -> SparkSession:
    from pyspark.sql import SparkSession

    from workbench.spark.session import spark_session

    if args.master:
        return spark_session(args.master, app_name=f"workbench-{args.job}")
    return SparkSession.builder.appName(f"workbench-{args.job}").getOrCreate()


def _rejected(rejects: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {r}" for r, n in rejects.items()) or "none"


def _coalesce(args: argparse.Namespace) -> str:
    from workbench.spark.queries.coalesce_base import CoalesceSettings
    from workbench.spark.queries.coalesce_batch import run_coalesce

    settings = CoalesceSettings(
        Window(args.kind, args.window),
        Equivalence(args.equivalence, args.tolerance, args.quantum),
        args.scheme,
    )
    run = run_coalesce(_session(args), args.input, settings, args.max_delay, args.output)
    if args.json:
        return json.dumps({"job": "coalesce", "scheme": args.scheme} | asdict(run))
    return (
        f"{args.scheme} coalescing: {run.tuples:,} tuples in {run.extents:,} coalesced tuples "
        f"in {run.seconds:.1f} s; rejected: {_rejected(run.rejects)}; written to {run.output}"
    )


def _run(args: argparse.Namespace) -> str:
    from workbench.spark.queries.batch import run_join

    op = _operator(args)
    run = run_join(_session(args), args.input, op, args.output)
    what = "results" if isinstance(op, MultiWayJoin) else "pairs"
    if args.json:
        return json.dumps(
            {
                "job": args.job,
                "operator": type(op).__name__,
                what: run.results,
                "rejects": run.rejects,
                "seconds": run.seconds,
                "range_width": run.plan.width,
                "output": run.output,
            }
        )
    return (
        f"{type(op).__name__}: {run.results:,} {what} in {run.seconds:.1f} s "
        f"(ranges of {run.plan.width:g}); rejected: {_rejected(run.rejects)}; written to "
        f"{run.output}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``workbench spark`` job; a bad argument or input exits 2, named."""
    args = parser().parse_args(argv)
    try:
        jobs = {"prepare": _prepare, "coalesce": _coalesce}
        print(jobs.get(args.job, _run)(args))
    except (ValueError, FileNotFoundError) as exc:
        print(f"workbench spark {args.job}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
