"""The workbench's settings from environment variables, read when asked (so a
``workbench dashboard --master ...`` that sets them before the server starts is seen).

- ``WORKBENCH_SPARK_MASTER`` (``local[2]``): the dashboard's Spark master;
- ``WORKBENCH_SHUFFLE_PARTITIONS`` (``1``): its ``spark.sql.shuffle.partitions``;
- ``WORKBENCH_DATA_DIR`` (the user's cache folder): where the real readings are kept;
- ``WORKBENCH_WORK_DIR`` (the system's temporary folder): where Spark runs write.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV", "Settings", "run_folder", "settings"]

ENV = {
    "spark_master": "WORKBENCH_SPARK_MASTER",
    "shuffle_partitions": "WORKBENCH_SHUFFLE_PARTITIONS",
    "data_dir": "WORKBENCH_DATA_DIR",
    "work_dir": "WORKBENCH_WORK_DIR",
}
"""Each setting's environment variable."""

_MASTER_PREFIXES = ("local", "spark://", "sc://", "yarn", "k8s://")


@dataclass(frozen=True)
class Settings:
    """What the dashboard and the data loaders run with."""

    spark_master: str = "local[2]"
    """The dashboard's Spark master: ``local[N]``, ``spark://host:port`` or ``sc://host:port``."""
    shuffle_partitions: int = 1
    """Shuffle partitions of the dashboard's session (``bench live`` weighs this lever)."""
    data_dir: Path | None = None
    """Where downloaded data (the real readings) is cached; None: the user's cache folder."""
    work_dir: Path | None = None
    """Where Spark runs keep their checkpoints and sinks; None: the system's temporary folder."""

    @property
    def readings_file(self) -> Path:
        """Where the real readings file is looked for (the download puts it there)."""
        return self.cache_dir / "data.txt.gz"

    @property
    def cache_dir(self) -> Path:
        """:attr:`data_dir`, or the user's cache folder for the workbench."""
        if self.data_dir is not None:
            return self.data_dir
        import pooch

        return Path(pooch.os_cache("workbench"))


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings the environment gives (``os.environ`` unless ``environ``); a bad value is
    an error naming the variable and the value.

    >>> settings({"WORKBENCH_SPARK_MASTER": "local[4]", "WORKBENCH_SHUFFLE_PARTITIONS": "2"})
    Settings(spark_master='local[4]', shuffle_partitions=2, data_dir=None, work_dir=None)
    >>> settings({"WORKBENCH_SHUFFLE_PARTITIONS": "two"})
    Traceback (most recent call last):
    ValueError: WORKBENCH_SHUFFLE_PARTITIONS = 'two' must be a whole number >= 1
    """
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
    partitions = env.get(ENV["shuffle_partitions"], "").strip()
    if partitions:
        if not partitions.isdigit() or int(partitions) < 1:
            raise ValueError(
                f"{ENV['shuffle_partitions']} = {partitions!r} must be a whole number >= 1"
            )
        values["shuffle_partitions"] = int(partitions)
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
