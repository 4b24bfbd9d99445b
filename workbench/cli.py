"""The ``workbench`` command line: paper examples, benchmarks, reports and the dashboard."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench", description="Join and coalesce event streams with uncertain timestamps."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("example4", help="print the PTJoin paper's Example 4 figures")
    bench = sub.add_parser("bench", help="run a benchmark and print its figures")
    bench_sub = bench.add_subparsers(dest="benchmark", required=True)
    st = bench_sub.add_parser("stime", help="stime tables vs the scalar binary search")
    st.add_argument("--templates", type=int, default=500, help="templates per stream")
    st.add_argument("--buckets", type=int, default=10, help="buckets per template")
    st.add_argument("--max-length", type=float, default=1000.0, help="max template length, ms")
    st.add_argument("--delta", type=float, default=0.8, help="confidence threshold")
    st.add_argument("--sample", type=int, default=200, help="pairs timed in the scalar loop")
    st.add_argument("--seed", type=int, default=0)
    pt = bench_sub.add_parser("ptjoin", help="PTJoin naive/loose/tight vs the band join floor")
    pt.add_argument("--events", type=int, default=100_000, help="events per stream")
    pt.add_argument("--naive-prefix", type=int, default=4_000, help="events run by naive")
    pt.add_argument("--templates", type=int, default=500)
    pt.add_argument("--seed", type=int, default=0)
    iv = bench_sub.add_parser("interval", help="the five interval correlation algorithms")
    iv.add_argument("--events", type=int, default=100_000, help="events per stream")
    iv.add_argument("--seed", type=int, default=0)
    wj = bench_sub.add_parser("wjoin", help="BEW vs FEW, GCA vs LCA, modified BEW")
    wj.add_argument("--max-rate", type=float, default=64_000.0, help="highest rate tried")
    wj.add_argument("--seed", type=int, default=0)
    co = bench_sub.add_parser("coalesce", help="eager vs lazy coalescing, cost surfaces")
    co.add_argument("--tuples", type=int, default=200_000)
    co.add_argument("--grid-tuples", type=int, default=200_000, help="tuples per cp x oop cell")
    co.add_argument("--readings", type=int, default=2_300_000, help="deployment readings")
    co.add_argument("--seed", type=int, default=0)
    sp = bench_sub.add_parser("spark", help="streaming PTJoin vs Spark's interval join")
    sp.add_argument("--events", type=int, default=100_000, help="events per stream")
    sp.add_argument("--master", default="local[*]", help="local[*], spark://h:p or sc://h:p")
    sp.add_argument("--seed", type=int, default=0)
    bench_sub.add_parser("dashboard", help="per-interaction latency of the dashboard tabs")
    rep = sub.add_parser("reports", help="execute every notebook into offline HTML reports")
    rep.add_argument("--out", default="build/reports", help="folder for the HTML and index.html")
    rep.add_argument("notebooks", nargs="*", help="notebooks to run (default: notebooks/*.ipynb)")
    dash = sub.add_parser("dashboard", help="serve the Panel dashboard")
    dash.add_argument("--port", type=int, default=5006)
    dash.add_argument("--address", default="127.0.0.1", help="bind address (localhost default)")
    dash.add_argument(
        "--allow-websocket-origin",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="accept websocket connections from this origin (repeatable; default: the address)",
    )
    dash.add_argument("--show", action="store_true", help="open a browser tab")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "example4":
        from workbench.paper_examples import example4

        print(example4().report())
    elif args.command == "bench":
        from workbench import bench

        if args.benchmark == "stime":
            report = bench.bench_stime(
                templates=args.templates,
                buckets=args.buckets,
                max_length=args.max_length,
                delta=args.delta,
                sample=args.sample,
                seed=args.seed,
            )
        elif args.benchmark == "ptjoin":
            report = bench.bench_ptjoin(
                events_per_stream=args.events,
                naive_prefix=args.naive_prefix,
                templates=args.templates,
                seed=args.seed,
            )
        elif args.benchmark == "interval":
            report = bench.bench_interval(events_per_stream=args.events, seed=args.seed)
        elif args.benchmark == "spark":
            from workbench.spark.bench import bench_spark

            report = bench_spark(events_per_stream=args.events, master=args.master, seed=args.seed)
        elif args.benchmark == "dashboard":
            from workbench.app.bench import bench_dashboard

            report = bench_dashboard()
        elif args.benchmark == "wjoin":
            report = bench.bench_wjoin(max_rate=args.max_rate, seed=args.seed)
        else:
            report = bench.bench_coalesce(
                tuples=args.tuples,
                grid_tuples=args.grid_tuples,
                deployment_readings=args.readings,
                seed=args.seed,
            )
        print(report)
    elif args.command == "reports":
        from workbench.viz.reports import build_reports

        for report in build_reports(args.out, args.notebooks or None):
            print(f"{report.html}  ({report.seconds:.1f} s)  {report.title}")
        print(f"index: {Path(args.out) / 'index.html'}")
    elif args.command == "dashboard":
        from workbench.app.serve import serve

        serve(
            port=args.port,
            address=args.address,
            show=args.show,
            allow_websocket_origin=args.allow_websocket_origin,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
