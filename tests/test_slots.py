"""Spark slots shared by the processes of one dashboard server (``WORKBENCH_SERVER_PROCS``):
the limit holds across them, a process's wait says so, and a slot frees when its process
ends, released or not."""

from __future__ import annotations

import subprocess
import sys

from workbench.app.runs.slots import Slots, spark_slots

CHILD = """
import sys, threading
from pathlib import Path
from workbench.app.runs.slots import Cancelled, Slots

slots, told, stop = Slots(int(sys.argv[2]), Path(sys.argv[1])), [], threading.Event()
threading.Timer(float(sys.argv[3]), stop.set).start()
try:
    slots.acquire("b", cancelled=stop, waiting=lambda used, limit: told.append((used, limit)))
except Cancelled:
    print("waited", told)
else:
    print("took", told)  # and ends holding it
    stop.set()
"""
"""Another process of the server: asks for a slot, gives up after a while."""


def _other_process(shared, limit: int = 1, patience: float = 1.0) -> str:
    args = [sys.executable, "-c", CHILD, str(shared), str(limit), str(patience)]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


def test_slots_hold_across_the_servers_processes(tmp_path):
    shared = tmp_path / "slots.lock"
    here = Slots(1, shared)
    here.acquire("a")
    here.acquire("a")  # a restart keeps its slot
    assert _other_process(shared) == "waited [(1, 1)]"  # told, then gave up
    assert _other_process(shared, limit=2) == "took []"  # a second slot was free
    here.release("a")
    assert _other_process(shared) == "took []"  # it ended holding the slot: freed with it
    here.acquire("c")
    assert here.in_use == 1
    here.close()  # frees its slots with the file
    assert here.in_use == 0 and _other_process(shared) == "took []"


def test_only_a_server_of_several_processes_writes_a_lock_file(monkeypatch, tmp_path):
    work = tmp_path / "work"  # not made yet
    monkeypatch.setenv("WORKBENCH_WORK_DIR", str(work))
    spark_slots.cache_clear()
    try:
        spark_slots().acquire("a")
        assert not work.exists()  # no lock file
        spark_slots().release("a")
        monkeypatch.setenv("WORKBENCH_SERVER_PROCS", "2")
        spark_slots.cache_clear()
        spark_slots().acquire("a")
        (lock,) = work.iterdir()
        assert lock.name.startswith("workbench-spark-slots-")
        spark_slots().release("a")
        spark_slots().close()
    finally:
        spark_slots.cache_clear()
