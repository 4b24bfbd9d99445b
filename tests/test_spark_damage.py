"""Damaged state of a live run (issue 18): a checkpoint that lost its newest offsets or commits
file, a sink folder that is read-only or whose disk is full.  Each stops the query; the
diagnosis names the damage and the folder; the restart on a new checkpoint re-reads the replay,
and its output equals the in-process PTJoin's: no pair twice, none lost."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness.live_cases import in_process_pairs
from tests.support.spark_cases import scenario, sorted_pairs
from workbench.data.replay import Replayer
from workbench.spark.queries.live import LiveJoin

pytestmark = pytest.mark.spark

D, DELTA = 700.0, 0.5


def _live(spark, tmp_path: Path, streams) -> LiveJoin:  # noqa: ANN001
    """A LiveJoin over ``tmp_path/in`` that processes what is there, two files a batch."""
    return LiveJoin(
        spark,
        tmp_path / "in",
        streams,
        D,
        DELTA,
        tmp_path / "work",
        available_now=True,
        max_files_per_trigger=2,
    )


def _run(live: LiveJoin) -> None:
    live.start()
    try:
        live.await_termination()
    except Exception:  # noqa: BLE001 (the query's failure is read through live.damage)
        assert live.damage is not None, live.error


def _recovered_equals_the_oracle(live: LiveJoin, streams, events) -> None:  # noqa: ANN001
    message = live.recover()
    assert live.run == 2 and "Restarted on a new checkpoint (run 2)" in message
    live.await_termination()
    got = sorted_pairs(live.pairs())
    assert len(np.unique(got, axis=0)) == len(got)  # none twice
    oracle = in_process_pairs(streams, events, D, DELTA)
    np.testing.assert_array_equal(got, oracle)  # none lost
    live.close()


@pytest.mark.parametrize("log", ["offsets", "commits"])
def test_a_checkpoint_that_lost_a_log_file_restarts_on_a_new_one(spark, tmp_path, log):
    streams, events = scenario(12, n=250)
    frame = events.to_frame()
    half = len(frame) // 2
    Replayer(frame.iloc[:half], tmp_path / "in", batch_ms=2000, prefix="first").run()
    first = _live(spark, tmp_path, streams)
    _run(first)
    first.close()
    folder = tmp_path / "work" / "run-001" / "chk" / log
    newest = max((p for p in folder.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    newest.unlink()
    Replayer(frame.iloc[half:], tmp_path / "in", batch_ms=2000, prefix="second").run()
    live = _live(spark, tmp_path, streams)  # resumes run 1 from its checkpoint
    _run(live)
    damage = live.damage
    assert damage is not None and damage.kind == "checkpoint"
    assert "checkpoint" in damage.message and str(tmp_path / "work" / "run-001") in damage.folder
    _recovered_equals_the_oracle(live, streams, events)


def _mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")


@pytest.mark.parametrize(("options", "kind"), [("ro", "read-only"), ("size=24k", "full")])
def test_a_sink_that_cannot_be_written_restarts_on_a_new_checkpoint(spark, tmp_path, options, kind):
    streams, events = scenario(12, n=250)
    Replayer(events, tmp_path / "in", batch_ms=2000).run()
    sink = tmp_path / "work" / "run-001" / "pairs"
    _mount_tmpfs(sink, options)
    try:
        live = _live(spark, tmp_path, streams)
        _run(live)
        damage = live.damage
        assert damage is not None and damage.kind == kind
        assert damage.folder == str(sink) and "sink folder" in damage.message
        _recovered_equals_the_oracle(live, streams, events)
    finally:
        subprocess.run(["umount", "-l", str(sink)], check=True)
