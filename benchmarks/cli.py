"""``./dev bench NAME [--json]`` (``python -m benchmarks NAME`` from a checkout): run one
benchmark and print its figures, or the same figures as JSON to compare runs across commits."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from benchmarks.report import BenchReport
from workbench.operators import TIMING_JOINS

__all__ = ["benchmark", "main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The benchmarks' options: one sub-command per benchmark."""
    top = argparse.ArgumentParser(
        prog="./dev bench", description="Run a benchmark and print its figures."
    )
    bench_sub = top.add_subparsers(dest="benchmark", required=True)
    # options left out stay out, so the benchmarks' own defaults (the workloads') apply;
    # every option's dest is a keyword argument of the benchmark's function
    kinds = {
        "stime": "stime tables vs the scalar binary search",
        "ptjoin": "PTJoin naive/loose/tight vs the band join floor",
        "interval": "the five interval correlation algorithms at each arrival rate (the grid "
        "of WORKBENCH_SCALE: ci or paper)",
        "wjoin": "BEW vs FEW at the paper's settings (Figures 4, 6, 7, delayed tuples, Section "
        "5), both mechanisms, with verdicts; GCA vs LCA and modified BEW across windows, the "
        "retail stand-in",
        "coalesce": "eager vs lazy coalescing, cost surfaces",
        "month": "the whole simulated month through tight PTJoin, at each delta",
        "spark": "joins by time ranges vs the write floor and the stream-stream queries, per "
        "master and workload (100,000 events per stream unless --events)",
        "live": "per-record latency of the live timing join on Spark over a replay",
        "room": "page, tab switch and slider latency for 1 and N sessions at once (browsers, "
        "or protocol-level clients: the server measured alone)",
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
    iv.add_argument(
        "--rate",
        dest="rates",
        metavar="RATE",
        type=float,
        action="append",
        help="run at this arrival rate (events/s in, both streams); repeat for several",
    )
    iv.add_argument("--max-results", type=int, help="pairs per run at most (shortens runs)")
    wj.add_argument(
        "--scale",
        choices=("ci", "paper"),
        help="sizes of the paper-settings part (default: WORKBENCH_SCALE, else ci); paper: "
        "2 s nested-loop and one-minute hash windows, compiled engine",
    )
    wj.add_argument(
        "--paper-only",
        action="store_true",
        help="run only the experiments at the paper's settings (both mechanisms, verdicts), "
        "not the window sweep and the retail stand-in",
    )
    co.add_argument("--tuples", type=int, help="tuples timed at cp 0.5, oop 0.1")
    co.add_argument("--grid-tuples", type=int, help="tuples per cp x oop cell")
    co.add_argument(
        "--cell-tuples", type=int, help="tuples per cell whose atomic costs are measured"
    )
    co.add_argument("--memory-tuples", type=int, help="tuples pushed per cp, allocated bytes")
    co.add_argument("--memory-window", type=int, help="window (tuples), allocated bytes")
    co.add_argument(
        "--cps-days", type=float, help="days of the simulated deployment for Table 5's cps"
    )
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
    sp.add_argument(
        "--workload",
        dest="workloads",
        metavar="NAME",
        action="append",
        choices=("dense", "sparse", "interval", "wjoin"),
        help="run this workload; repeat for several (default: dense and sparse PTJoin)",
    )
    sp.add_argument(
        "--no-baselines",
        dest="baselines",
        action="store_false",
        help="skip the stream-stream queries (minutes at 100,000 events per stream)",
    )
    lv.add_argument("--speed", type=float, help="replay speed (x real time)")
    lv.add_argument("--master", help="local[N] or spark://h:p")
    lv.add_argument("--seconds", type=float, help="replay only this much wall time of data")
    lv.add_argument(
        "--algorithm",
        choices=tuple(TIMING_JOINS),
        help="the timing join the tasks run (default ptjoin; an interval correlation replays "
        "the deployment with its templates widened to intervals)",
    )
    lv.add_argument(
        "--levers",
        action="store_true",
        help="first the design before, then each latency lever alone, then all",
    )
    lv.add_argument(
        "--profile",
        action="store_true",
        help="also where one micro-batch's time goes: each step of the live join added in turn",
    )
    sk.add_argument("--minutes", type=float, help="wall time of the soak")
    sk.add_argument("--speed", type=float, help="replay speed (x real time)")
    sk.add_argument("--master", help="local[N] or spark://h:p")
    sk.add_argument("--sample-seconds", type=float, help="seconds between samples")
    sk.add_argument("--out", metavar="DIR", help="also write the samples to DIR/soak.csv")
    rm.add_argument(
        "--sessions",
        type=int,
        action="append",
        help="sessions at once, after one alone; repeat for several rooms (default: 8 for "
        "browsers; 8 and 32 for protocol clients)",
    )
    rm.add_argument(
        "--clients",
        choices=("browser", "protocol"),
        help="who the users are: headless Chromium (default; what a person sees) or clients "
        "speaking Bokeh's websocket protocol (the server measured alone)",
    )
    rm.add_argument("--moves", type=int, help="slider moves per analytical tab and session")
    rm.add_argument(
        "--cycles",
        type=int,
        help="sessions opened and closed one after another (memory check; browser room only)",
    )
    rm.add_argument(
        "--floor",
        action="store_true",
        help="the same rooms on a page of one figure and four sliders per tab, for comparison",
    )
    rm.add_argument(
        "--by-kind",
        action="store_true",
        help="protocol clients: the server's CPU by kind of interaction (page, first opening, "
        "move, return), one user at a time, against the floor page's, per Bokeh model",
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
    return top


def benchmark(name: str) -> Callable[..., BenchReport]:
    """The function behind ``./dev bench <name>``, imported only when run (Spark and
    Panel load only for their own benchmarks)."""
    if name == "spark":
        from benchmarks.spark import bench_spark

        return bench_spark
    if name == "live":
        from benchmarks.live import bench_live

        return bench_live
    if name == "dashboard":
        from benchmarks.dashboard import bench_dashboard

        return bench_dashboard
    if name == "soak":
        from benchmarks.soak import bench_soak

        return bench_soak
    if name == "room":
        from benchmarks.room import bench_room

        return bench_room
    if name == "wjoin":
        from benchmarks.wjoin import bench_wjoin

        return bench_wjoin
    if name == "coalesce":
        from benchmarks.coalesce import bench_coalesce

        return bench_coalesce
    from benchmarks import timing_joins

    return {
        "stime": timing_joins.bench_stime,
        "ptjoin": timing_joins.bench_ptjoin,
        "interval": timing_joins.bench_interval,
        "month": timing_joins.bench_month,
    }[name]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark named in ``argv`` and print its report."""
    args = parser().parse_args(argv)
    skip = ("benchmark", "as_json")
    options = {k: v for k, v in vars(args).items() if k not in skip}
    report = benchmark(args.benchmark)(**options)
    print(report.to_json() if args.as_json else report.with_kernels())
    return 0
