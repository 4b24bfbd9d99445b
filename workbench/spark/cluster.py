"""Spark servers on loopback, from the pip installation: a standalone cluster (one master,
one worker) and a Spark Connect server.

Spark's own launchers start them: ``bin/spark-class`` runs ``deploy.master.Master`` and
``deploy.worker.Worker``, ``bin/spark-submit`` runs ``SparkConnectServer``;
``SPARK_LOCAL_IP=127.0.0.1`` keeps every socket on loopback.  Point a session at either with
``spark_session(server.master_url)``: the master is configuration.

:func:`executor_pids` finds the executor JVMs a worker launched and :func:`kill_executor`
kills one, for fault tests and benchmarks.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pyspark

__all__ = [
    "EXECUTOR_CLASS",
    "StandaloneCluster",
    "connect_server",
    "executor_pids",
    "free_port",
    "kill_executor",
    "spark_home",
    "standalone_cluster",
]


def spark_home() -> Path:
    """The pyspark package folder, which is a complete SPARK_HOME."""
    return Path(pyspark.__file__).parent


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
"""The main class of the executor JVM a standalone worker launches for an application."""


def _process_table() -> dict[int, tuple[int, int]]:
    """Every visible process: pid -> (parent pid, start time in clock ticks since boot; 0 where
    ``ps`` stands in for a missing ``/proc``)."""
    table: dict[int, tuple[int, int]] = {}
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        out = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True)
        for line in out.stdout.splitlines():
            pid, ppid = line.split()
            table[int(pid)] = (int(ppid), 0)
        return table
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it exited meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)", which may hold spaces
        table[int(entry.name)] = (int(fields[1]), int(fields[19]))
    return table


def _command_line(pid: int) -> str:
    """The process's arguments joined by spaces ("" if it is gone)."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.parent.exists():
        try:
            return cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return ""
    out = subprocess.run(["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True)
    return out.stdout.strip()


def executor_pids(worker: subprocess.Popen[bytes] | int) -> list[int]:
    """The executor JVMs (:data:`EXECUTOR_CLASS`) running under a standalone ``worker`` (its
    process, e.g. ``cluster.processes[1]``, or its pid), oldest first.

    A worker launches one executor per application it serves as a child process; after an
    executor dies, the master asks a worker with free cores for a replacement, which then
    appears here as the newest.  Linux reads ``/proc``; elsewhere ``ps`` is asked.

    >>> executor_pids(os.getpid())  # this process launched none
    []
    """
    root = worker if isinstance(worker, int) else worker.pid
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        if EXECUTOR_CLASS in _command_line(pid):
            found.append(pid)
    return sorted(found, key=lambda pid: (table[pid][1], pid))


def kill_executor(
    worker: subprocess.Popen[bytes] | int, sig: signal.Signals = signal.SIGKILL
) -> int:
    """Send ``sig`` (default SIGKILL: no shutdown hook runs) to the oldest executor running
    under ``worker`` (see :func:`executor_pids`) and return its pid; a ``LookupError`` if the
    worker runs none.  The master then launches a replacement where cores are free, and the
    application's driver reruns the tasks the executor was running.

    >>> kill_executor(os.getpid())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    LookupError: worker pid ... runs no executor (org.apache.spark.executor...)
    """
    pids = executor_pids(worker)
    if not pids:
        root = worker if isinstance(worker, int) else worker.pid
        raise LookupError(f"worker pid {root} runs no executor ({EXECUTOR_CLASS})")
    os.kill(pids[0], sig)
    return pids[0]


@dataclass
class StandaloneCluster:
    """Running Spark server processes and the URL a session uses (``spark://`` or ``sc://``)."""

    master_url: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[IO[bytes]] = field(default_factory=list)

    def stop(self) -> None:
        """Stop worker then master (their whole process groups)."""
        for proc in reversed(self.processes):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        for log in self.logs:
            log.close()


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[2]} exited with code {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout:g} s")


@contextmanager
def standalone_cluster(
    cores: int = 2,
    memory: str = "1g",
    log_dir: str | os.PathLike[str] | None = None,
    timeout: float = 60.0,
    workers: int = 1,
) -> Iterator[StandaloneCluster]:
    """Start a master and ``workers`` workers (``cores`` and ``memory`` each) on free loopback
    ports; stop them all on exit.  ``StandaloneCluster.processes`` lists the master first,
    then the workers in order."""
    if workers < 1:
        raise ValueError(f"workers = {workers!r} must be at least 1")
    port, web = free_port(), free_port()
    worker_webs = [free_port() for _ in range(workers)]
    url = f"spark://127.0.0.1:{port}"
    commands = [
        [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(web),
        ],
        *(
            [
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                str(worker_web),
                url,
            ]
            for worker_web in worker_webs
        ),
    ]
    with _launched(
        url, [("spark-class", cmd) for cmd in commands], [port, *worker_webs], log_dir, timeout
    ) as cluster:
        yield cluster


@contextmanager
def connect_server(
    master: str = "local[2]",
    log_dir: str | os.PathLike[str] | None = None,
    timeout: float = 90.0,
) -> Iterator[StandaloneCluster]:
    """Start a Spark Connect server (running ``master``) on a free loopback port; stop on exit.

    Its Python workers run this interpreter, so ``mapInPandas`` steps see the workbench.
    """
    port = free_port()
    command = [
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        master,
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        "spark.sql.session.timeZone=UTC",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.execution.arrow.pyspark.enabled=true",
    ]
    with _launched(
        f"sc://127.0.0.1:{port}", [("spark-submit", command)], [port], log_dir, timeout
    ) as server:
        yield server


@contextmanager
def _launched(
    url: str,
    commands: list[tuple[str, list[str]]],
    ports: list[int],
    log_dir: str | os.PathLike[str] | None,
    timeout: float,
) -> Iterator[StandaloneCluster]:
    """Start each ``bin/<launcher> args`` in its own process group, waiting for its port."""
    home = spark_home()
    env = dict(
        os.environ,
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
    )
    logs = Path(log_dir) if log_dir is not None else None
    cluster = StandaloneCluster(url)
    try:
        for (launcher, args), port in zip(commands, ports, strict=True):
            out = None
            if logs is not None:
                out = (logs / f"{args[0].rsplit('.', 1)[-1].lstrip('-')}-{port}.log").open("wb")
                cluster.logs.append(out)
            proc = subprocess.Popen(
                [str(home / "bin" / launcher), *args],
                env=env,
                stdout=out or subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            cluster.processes.append(proc)
            _wait_for_port(port, proc, timeout)
        yield cluster
    finally:
        cluster.stop()
