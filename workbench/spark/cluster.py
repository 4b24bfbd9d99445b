"""Spark servers on loopback, from the pip installation: a standalone cluster (one master,
one worker) and a Spark Connect server.

Spark's own launchers start them: ``bin/spark-class`` runs ``deploy.master.Master`` and
``deploy.worker.Worker``, ``bin/spark-submit`` runs ``SparkConnectServer``;
``SPARK_LOCAL_IP=127.0.0.1`` keeps every socket on loopback.  Point a session at either with
``spark_session(server.master_url)``: the master is configuration.
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
    "StandaloneCluster",
    "connect_server",
    "free_port",
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
