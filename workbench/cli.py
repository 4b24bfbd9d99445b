"""The ``workbench`` command line: the paper's example, reports, Spark jobs and the dashboard."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from workbench.config import ENV, settings

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench", description="Join and coalesce event streams with uncertain timestamps."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("example4", help="print the PTJoin paper's Example 4 figures")
    rep = sub.add_parser("reports", help="execute every notebook into offline HTML reports")
    rep.add_argument(
        "--out",
        default="build/reports",
        help="folder for the HTML, the executed notebooks and index.html",
    )
    rep.add_argument(
        "--paper",
        action="store_true",
        help="the papers' sizes (WORKBENCH_SCALE=paper; the six notebooks about 37 minutes of "
        "one core, see docs/notebooks.md)",
    )
    rep.add_argument(
        "notebooks",
        nargs="*",
        metavar="PATH",
        help="a notebooks folder or notebooks to run (default: the checkout's notebooks/)",
    )
    sub.add_parser(
        "spark",
        help="timing joins as Spark jobs over event files (workbench spark -h)",
        add_help=False,
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["spark"]:
        from workbench.spark.submit import main as spark_main

        return spark_main(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "example4":
        from workbench.paper_examples import example4

        print(example4().report())
    elif args.command == "reports":
        from workbench.experiments.scale import SCALE_ENV
        from workbench.viz.reports import build_reports

        if args.paper:
            os.environ[SCALE_ENV] = "paper"  # the notebooks' kernels inherit it
        try:
            reports = build_reports(
                args.out,
                args.notebooks,
                timeout=None if args.paper else 600,
                progress=sys.stderr.isatty() or args.paper,
            )
        except (FileNotFoundError, ValueError) as exc:
            print(f"workbench reports: {exc}", file=sys.stderr)
            return 2
        for report in reports:
            print(
                f"{report.html}  ({report.seconds:.1f} s, {report.cpu_seconds:.1f} CPU s)  "
                f"{report.title}"
            )
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
