"""The workbench's settings from environment variables, read when asked (so a
``workbench dashboard --master ...`` that sets them before the server starts is seen).

- ``WORKBENCH_SPARK_MASTER`` (``local[2]``): the dashboard's Spark master;
- ``WORKBENCH_SHUFFLE_PARTITIONS`` (``1``): its ``spark.sql.shuffle.partitions``;
- ``WORKBENCH_DATA_DIR`` (``data/`` in a source checkout, else the user's cache folder): where
  the real readings are downloaded and the user's own files go (:attr:`Settings.cache_dir`);
- ``WORKBENCH_WORK_DIR`` (the system's temporary folder): where Spark runs write;
- ``WORKBENCH_SPARK_SLOTS`` (``2``): Spark runs going at once on the dashboard's server;
- ``WORKBENCH_MAX_UPLOAD_MB`` (``50``): the largest file the dashboard accepts (a CSV upload),
  in MB (2**20 bytes); it also sizes the server's websocket message limit;
- ``WORKBENCH_SPARK_AT_START`` (``yes``): whether the dashboard's server starts and warms Spark
  when it starts (``no``: at the first Spark run, for a server used for the analytical tabs);
- ``WORKBENCH_SERVER_PROCS`` (``1``): the dashboard server's processes, each serving its share
  of the sessions on a thread of its own.

A path typed into the page is confined to the data and work folders (:func:`page_path`); the
Python functions that take paths are not.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV", "Settings", "checkout", "page_path", "run_folder", "settings"]

ENV = {
    "spark_master": "WORKBENCH_SPARK_MASTER",
    "shuffle_partitions": "WORKBENCH_SHUFFLE_PARTITIONS",
    "data_dir": "WORKBENCH_DATA_DIR",
    "work_dir": "WORKBENCH_WORK_DIR",
    "max_upload_mb": "WORKBENCH_MAX_UPLOAD_MB",
    "spark_slots": "WORKBENCH_SPARK_SLOTS",
    "spark_at_start": "WORKBENCH_SPARK_AT_START",
    "server_procs": "WORKBENCH_SERVER_PROCS",
}
"""Each setting's environment variable."""

_MASTER_PREFIXES = ("local", "spark://", "sc://", "yarn", "k8s://")
_YES_NO = {"yes": True, "true": True, "1": True, "no": False, "false": False, "0": False}
MAX_UPLOAD_MB_CEILING = 1024.0
"""The largest upload limit accepted (MB): the file is held in memory, base64 in transit."""


@dataclass(frozen=True)
class Settings:
    """What the dashboard and the data loaders run with."""

    spark_master: str = "local[2]"
    """The dashboard's Spark master: ``local[N]``, ``spark://host:port`` or ``sc://host:port``."""
    shuffle_partitions: int = 1
    """Shuffle partitions of the dashboard's session (``bench live`` weighs this lever)."""
    data_dir: Path | None = None
    """Where downloaded data (the real readings) and the user's files go; None: the default
    folder (:attr:`cache_dir`)."""
    work_dir: Path | None = None
    """Where Spark runs keep their checkpoints and sinks; None: the system's temporary folder."""
    max_upload_mb: float = 50.0
    """The largest file the dashboard accepts (MB of 2**20 bytes): a larger upload is refused
    before it is read; the websocket message limit of ``workbench dashboard`` follows it."""

    spark_slots: int = 2
    """Spark runs (live joins, the tabs' Spark runs) going at once on the dashboard's server;
    a start beyond them waits for one to end, and its page says so."""
    spark_at_start: bool = True
    """Whether the dashboard's server starts Spark and warms it up when it starts (about a
    minute of CPU, the first Start then finds Java running); False: at the first Spark run."""
    server_procs: int = 1
    """The dashboard server's processes (Bokeh's ``--num-procs``): each serves its share of the
    sessions on its one thread, with its own caches and Spark session; the Spark slots stay
    shared among them."""

    @property
    def max_upload_bytes(self) -> int:
        """:attr:`max_upload_mb` in bytes."""
        return int(self.max_upload_mb * 2**20)

    @property
    def work_folder(self) -> Path:
        """:attr:`work_dir`, or the system's temporary folder."""
        return self.work_dir if self.work_dir is not None else Path(tempfile.gettempdir())

    @property
    def readings_file(self) -> Path:
        """Where the real readings file is looked for (the download puts it there)."""
        return self.cache_dir / "data.txt.gz"

    @property
    def cache_dir(self) -> Path:
        """:attr:`data_dir`; else ``data/`` of the source checkout the package runs from
        (:func:`checkout`), where a user looks for data; else, installed from a wheel, the
        user's cache folder for the workbench (``~/.cache/workbench`` on Linux)."""
        if self.data_dir is not None:
            return self.data_dir
        root = checkout()
        if root is not None:
            return root / "data"
        import pooch

        return Path(pooch.os_cache("workbench"))


def checkout() -> Path | None:
    """The source checkout the package runs from (an editable install or ``PYTHONPATH``): the
    folder holding the package folder and a ``pyproject.toml``; None when installed from a
    wheel (the package then sits in ``site-packages``, which has none)."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings the environment gives (``os.environ`` unless ``environ``); a bad value is
    an error naming the variable and the value.

    >>> settings({"WORKBENCH_SPARK_MASTER": "local[4]", "WORKBENCH_SHUFFLE_PARTITIONS": "2"})
    Settings(spark_master='local[4]', shuffle_partitions=2, data_dir=None, work_dir=None, max_upload_mb=50.0, spark_slots=2, spark_at_start=True, server_procs=1)
    >>> settings({"WORKBENCH_SHUFFLE_PARTITIONS": "two"})
    Traceback (most recent call last):
    ValueError: WORKBENCH_SHUFFLE_PARTITIONS = 'two' must be a whole number >= 1
    """  # noqa: E501
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    master = env.get(ENV["spark_master"], "").strip()
    if master:
        if not master.startswith(_MASTER_PREFIXES):
            raise ValueError(
                f"{ENV['spark_master']} = {master!r} is not a Spark master: give local[N], "
                "spark://host:port or sc://host:port"
            )
        values["spark_master"] = master
    for key in ("shuffle_partitions", "spark_slots", "server_procs"):
        count = env.get(ENV[key], "").strip()
        if count:
            if not count.isdigit() or int(count) < 1:
                raise ValueError(f"{ENV[key]} = {count!r} must be a whole number >= 1")
            values[key] = int(count)
    upload = env.get(ENV["max_upload_mb"], "").strip()
    if upload:
        try:
            megabytes = float(upload)
        except ValueError:
            megabytes = math.nan
        if not 0 < megabytes <= MAX_UPLOAD_MB_CEILING:
            raise ValueError(
                f"{ENV['max_upload_mb']} = {upload!r} must be a number of MB above 0 and at most "
                f"{MAX_UPLOAD_MB_CEILING:g}"
            )
        values["max_upload_mb"] = megabytes
    at_start = env.get(ENV["spark_at_start"], "").strip()
    if at_start:
        if at_start.lower() not in _YES_NO:
            raise ValueError(f"{ENV['spark_at_start']} = {at_start!r} must be yes or no")
        values["spark_at_start"] = _YES_NO[at_start.lower()]
    for key in ("data_dir", "work_dir"):
        folder = env.get(ENV[key], "").strip()
        if folder:
            values[key] = Path(folder).expanduser()
    return Settings(**values)  # type: ignore[arg-type]


def run_folder(prefix: str, root: str | os.PathLike[str] | None = None) -> Path:
    """A new folder for one Spark run under ``root``, else the configured work folder
    (``WORKBENCH_WORK_DIR``, made when missing), else the system's temporary folder."""
    base = root if root is not None else settings().work_dir
    if base is not None:
        Path(base).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def page_path(text: str, folder: Path, what: str, variable: str) -> Path:
    """The path a user typed into the page, resolved (``..`` and symlinks followed), when it
    lies inside ``folder`` (also resolved); a relative path is taken relative to ``folder``.
    Anything else is a ValueError naming ``what``, the folder, its ``variable`` and the text:
    nothing outside the folder is opened (resolving reads links, never a file's content).

    >>> page_path("readings/data.txt", Path("/srv/data"), "readings file", "WORKBENCH_DATA_DIR")
    PosixPath('/srv/data/readings/data.txt')
    >>> page_path("../x", Path("/srv/data"), "readings file", "WORKBENCH_DATA_DIR")
    Traceback (most recent call last):
    ValueError: readings file must be inside the data folder /srv/data (WORKBENCH_DATA_DIR); got ../x
    """  # noqa: E501
    base = Path(folder).expanduser().resolve()
    text = text.strip()
    try:
        given = Path(text).expanduser() if text else None
        resolved = (base / given).resolve() if given is not None else None
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL in the text
        resolved = None
    if resolved is None or not resolved.is_relative_to(base) or resolved == base:
        kind = "data" if variable == ENV["data_dir"] else "work"
        raise ValueError(
            f"{what} must be inside the {kind} folder {base} ({variable}); got {text or '(empty)'}"
        )
    return resolved
