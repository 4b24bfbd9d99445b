"""The ``workbench`` command line: paper examples, benchmarks, reports and the dashboard."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.config import ENV, settings

if TYPE_CHECKING:
    from workbench.bench import BenchReport

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench", description="Join and coalesce event streams with uncertain timestamps."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("example4", help="print the PTJoin paper's Example 4 figures")
    bench = sub.add_parser("bench", help="run a benchmark and print its figures")
    bench_sub = bench.add_subparsers(dest="benchmark", required=True)
    # options left out stay out, so the benchmarks' own defaults (the workloads') apply;
    # every option's dest is a keyword argument of the benchmark's function
    kinds = {
        "stime": "stime tables vs the scalar binary search",
        "ptjoin": "PTJoin naive/loose/tight vs the band join floor",
        "interval": "the five interval correlation algorithms",
        "wjoin": "BEW vs FEW, GCA vs LCA, modified BEW",
        "coalesce": "eager vs lazy coalescing, cost surfaces",
        "month": "the whole simulated month through tight PTJoin, at each delta",
        "spark": "streaming PTJoin vs Spark's interval join and a pandas-UDF join, per master "
        "(20,000 events per stream unless --events)",
        "live": "per-record latency of the live PTJoin on Spark over a replay",
        "room": "page, tab switch and slider latency for 1 and N browser sessions at once",
        "soak": "a 20-minute live PTJoin over the simulated month: state rows, memory and "
        "latency over time",
    }
    st, pt, iv, wj, co, mo, sp, lv, rm, sk = (
        bench_sub.add_parser(name, help=text, argument_default=argparse.SUPPRESS)
        for name, text in kinds.items()
    )
    db = bench_sub.add_parser(
        "dashboard",
        help="per-interaction latency of the dashboard tabs",
        argument_default=argparse.SUPPRESS,
    )
    mo.add_argument("--d", type=float, help="the window d (ms)")
    mo.add_argument("--prefix", type=int, help="events run by the python reference")
    for every in (st, pt, iv, wj, co, mo, sp, lv, rm, sk, db):
        every.add_argument(
            "--json",
            dest="as_json",
            action="store_true",
            default=False,
            help="print the figures as JSON (to compare runs across commits)",
        )
    for streams in (pt, iv, sp):
        streams.add_argument(
            "--events",
            dest="events_per_stream",
            metavar="EVENTS",
            type=int,
            help="events per stream",
        )
    st.add_argument("--templates", type=int, help="templates per stream")
    st.add_argument("--buckets", type=int, help="buckets per template")
    st.add_argument("--max-length", type=float, help="max template length, ms")
    st.add_argument("--delta", type=float, help="confidence threshold")
    st.add_argument("--sample", type=int, help="pairs timed in the scalar loop")
    pt.add_argument("--naive-prefix", type=int, help="events run by naive")
    pt.add_argument("--templates", type=int, help="templates per stream")
    wj.add_argument("--max-rate", type=float, help="highest rate tried (python)")
    wj.add_argument("--compiled-max-rate", type=float, help="highest rate tried (compiled)")
    co.add_argument("--tuples", type=int, help="tuples timed at cp 0.5, oop 0.1")
    co.add_argument("--grid-tuples", type=int, help="tuples per cp x oop cell")
    co.add_argument(
        "--readings",
        dest="deployment_readings",
        metavar="READINGS",
        type=int,
        help="deployment readings",
    )
    sp.add_argument(
        "--master",
        dest="masters",
        metavar="MASTER",
        action="append",
        help="run on this master; repeat the option for several, run in turn (default: "
        "local[1], local[2] and standalone). local[N], spark://h:p, sc://h:p, or standalone: "
        "a 2-worker, 1-core-each cluster on loopback started by the bench. No comma lists: "
        "spark://h1:p1,h2:p2 is one (high-availability) master",
    )
    sp.add_argument("--rounds", type=int, help="timed runs per query and master (best kept)")
    lv.add_argument("--speed", type=float, help="replay speed (x real time)")
    lv.add_argument("--master", help="local[N] or spark://h:p")
    lv.add_argument("--seconds", type=float, help="replay only this much wall time of data")
    lv.add_argument(
        "--levers",
        action="store_true",
        help="first the design before, then each latency lever alone, then all",
    )
    sk.add_argument("--minutes", type=float, help="wall time of the soak")
    sk.add_argument("--speed", type=float, help="replay speed (x real time)")
    sk.add_argument("--master", help="local[N] or spark://h:p")
    sk.add_argument("--sample-seconds", type=float, help="seconds between samples")
    sk.add_argument("--out", metavar="DIR", help="also write the samples to DIR/soak.csv")
    rm.add_argument("--sessions", type=int, help="browser sessions at once")
    rm.add_argument("--moves", type=int, help="slider moves per analytical tab and session")
    rm.add_argument(
        "--cycles", type=int, help="sessions opened and closed one after another (memory check)"
    )
    rm.add_argument(
        "--floor",
        action="store_true",
        help="the same rooms on a page of one figure and four sliders per tab, for comparison",
    )
    rm.add_argument(
        "--procs", type=int, help="the dashboard server's processes (default 1; the floor's: 1)"
    )
    rm.add_argument(
        "--think",
        type=float,
        help="seconds each user pauses before a tab switch or slider move, on average "
        "(default 0: every user acts again as soon as the page has answered)",
    )
    for seeded in (st, pt, iv, wj, co, sp):
        seeded.add_argument("--seed", type=int, help="random seed")
    rep = sub.add_parser("reports", help="execute every notebook into offline HTML reports")
    rep.add_argument("--out", default="build/reports", help="folder for the HTML and index.html")
    rep.add_argument(
        "notebooks",
        nargs="*",
        metavar="PATH",
        help="a notebooks folder or notebooks to run (default: the checkout's notebooks/)",
    )
    dash = sub.add_parser("dashboard", help="serve the Panel dashboard")
    dash.add_argument("--port", type=int, default=5006)
    dash.add_argument(
        "--address",
        default="127.0.0.1",
        help="bind address (default 127.0.0.1: this machine only); any other address exposes "
        "the unauthenticated dashboard to the network and needs --allow-websocket-origin",
    )
    dash.add_argument(
        "--allow-websocket-origin",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="accept websocket connections from this origin (repeatable; default on 127.0.0.1: "
        "the address; required for any other address)",
    )
    dash.add_argument("--show", action="store_true", help="open a browser tab")
    dash.add_argument(
        "--dry-run",
        action="store_true",
        help="print the panel serve command it runs, with every option, and exit",
    )
    for flag, key, metavar, text in (
        ("--master", "spark_master", "MASTER", "Spark master: local[N], spark://h:p, sc://h:p"),
        ("--shuffle-partitions", "shuffle_partitions", "N", "the Spark shuffle partitions"),
        (
            "--data-dir",
            "data_dir",
            "DIR",
            "where downloads (the real readings) and your files go (default: a checkout's "
            "data/, else the user's cache folder)",
        ),
        ("--work-dir", "work_dir", "DIR", "where Spark runs write checkpoints and output"),
        ("--spark-slots", "spark_slots", "N", "Spark runs going at once (more wait, told so)"),
        ("--procs", "server_procs", "N", "server processes, each serving a share of the sessions"),
        (
            "--spark-at-start",
            "spark_at_start",
            "yes|no",
            "start and warm Spark with the server (no: at the first Spark run)",
        ),
        (
            "--max-upload-mb",
            "max_upload_mb",
            "MB",
            "largest file the page accepts (default 50); also sizes the websocket message limit",
        ),
    ):
        dash.add_argument(flag, dest=key, metavar=metavar, help=f"{text} (sets {ENV[key]})")
    return parser


def _benchmark(name: str) -> Callable[..., BenchReport]:
    """The function behind ``workbench bench <name>``, imported only when run (Spark and
    Panel load only for their own benchmarks)."""
    if name == "spark":
        from workbench.spark.bench import bench_spark

        return bench_spark
    if name == "live":
        from workbench.spark.live_bench import bench_live

        return bench_live
    if name == "dashboard":
        from workbench.app.bench import bench_dashboard

        return bench_dashboard
    if name == "soak":
        from workbench.spark.soak import bench_soak

        return bench_soak
    if name == "room":
        from workbench.app.room import bench_room

        return bench_room
    from workbench import bench

    return {
        "stime": bench.bench_stime,
        "ptjoin": bench.bench_ptjoin,
        "interval": bench.bench_interval,
        "wjoin": bench.bench_wjoin,
        "coalesce": bench.bench_coalesce,
        "month": bench.bench_month,
    }[name]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "example4":
        from workbench.paper_examples import example4

        print(example4().report())
    elif args.command == "bench":
        skip = ("command", "benchmark", "as_json")
        options = {k: v for k, v in vars(args).items() if k not in skip}
        report = _benchmark(args.benchmark)(**options)
        print(report.to_json() if args.as_json else report.with_kernels())
    elif args.command == "reports":
        from workbench.viz.reports import build_reports

        try:
            reports = build_reports(args.out, args.notebooks)
        except FileNotFoundError as exc:
            print(f"workbench reports: {exc}", file=sys.stderr)
            return 2
        for report in reports:
            print(f"{report.html}  ({report.seconds:.1f} s)  {report.title}")
        print(f"index: {Path(args.out) / 'index.html'}")
    elif args.command == "dashboard":
        import shlex

        from workbench.app.serve import check_exposure, serve, serve_command

        given = {ENV[k]: str(v) for k in ENV if (v := getattr(args, k, None)) is not None}
        try:
            settings({**os.environ, **given})  # a bad value stops here, named
            # another address than loopback: only with origins given (the warning: serve's)
            check_exposure(args.address, args.port, args.allow_websocket_origin)
        except ValueError as exc:
            print(f"workbench dashboard: {exc}", file=sys.stderr)
            return 2
        os.environ.update(given)  # the server reads its settings from its environment
        if args.dry_run:
            cmd = serve_command(args.port, args.address, args.allow_websocket_origin, args.show)
            print(" ".join([*(f"{k}={shlex.quote(v)}" for k, v in given.items()), shlex.join(cmd)]))
            return 0
        serve(
            port=args.port,
            address=args.address,
            show=args.show,
            allow_websocket_origin=args.allow_websocket_origin,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
