"""Damaged state of a live run, told in the page's words: a checkpoint whose offsets or commits
log lost (or gained) a file, and a sink folder that cannot be written (read-only) or whose disk
is full.  Spark stops the query with an error deep in a Java or Python trace;
:func:`diagnose` finds what it means and which of the run's folders it names.

Neither kind can be mended in place: a checkpoint whose logs disagree cannot say which
micro-batches committed, and a batch that failed to write is not committed.  The way on is a
**new checkpoint** (:meth:`workbench.spark.queries.live.LiveJoin.recover`, the page's "Restart on a
new checkpoint"): its query re-reads the replay from the start into a sink of its own, and every
batch replaces its own partition (:class:`~workbench.spark.queries.live_sink.BatchWriter`), so the
new run's output has each pair exactly once.

>>> d = diagnose("java.io.IOException: No space left on device", Path("/w"))
>>> d.kind, d.folder
('full', '/w')
>>> diagnose("[CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple "
...          "streaming jobs detected for 4.", Path("/w/run-001")).kind
'checkpoint'
>>> diagnose("foreachBatch raised ValueError: boom", Path("/w")) is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Damage", "diagnose"]

_SIGNS = {
    "full": ("No space left on device", "Disk quota exceeded"),
    "read-only": ("Read-only file system", "Mkdirs failed to create", "Permission denied"),
    "checkpoint": (
        "CONCURRENT_STREAM_LOG_UPDATE",
        "concurrently using",
        "doesn't exist in the offset log",
        "batch doesn't exist",
    ),
}
"""Phrases of Spark's, Hadoop's and the OS's errors, by the kind of damage they mean."""
_ROLES = {"pairs": "the sink folder", "chk": "the checkpoint folder"}


@dataclass(frozen=True)
class Damage:
    """What damaged a run: ``kind`` (``full``, ``read-only``, ``checkpoint``), the folder the
    error names (the run's own, else ``work_dir``) and what happened, in plain words."""

    kind: str
    folder: str
    message: str


def _named_folder(error: str, work_dir: Path) -> tuple[str, str]:
    """The deepest of the run's folders (``run-<k>/pairs`` or ``run-<k>/chk``) the error
    names, with its role; else ``work_dir``."""
    found = re.search(re.escape(str(work_dir)) + r"(/run-\d+)?(/(pairs|chk))?", error)
    if found is None:
        return str(work_dir), "the run's folder"
    return found.group(0), _ROLES.get(found.group(3) or "", "the run's folder")


def diagnose(error: str | None, work_dir: Path) -> Damage | None:
    """The damage that ``error`` (a stopped query's) reports for the runs under ``work_dir``,
    or None when it reports something else."""
    if not error:
        return None
    kind = next((k for k, signs in _SIGNS.items() if any(s in error for s in signs)), None)
    if kind is None:
        return None
    folder, role = _named_folder(error, work_dir)
    if kind == "full":
        what = f"The disk holding {role} {folder} is full (no space left on the device)"
    elif kind == "read-only":
        what = f"{role.capitalize()} {folder} cannot be written (read-only, or no permission)"
    else:
        what = (
            f"The run's checkpoint under {folder} is damaged: its offsets and commits logs "
            "disagree (a file was lost or changed), so it cannot say which micro-batches "
            "committed"
        )
    return Damage(kind, folder, what + ". The micro-batch in flight was not committed.")
