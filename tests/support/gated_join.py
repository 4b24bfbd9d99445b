"""A PTJoin held at a gate, for the executor-fault tests: its tasks wait until a file exists,
so a test kills an executor while the join's tasks run, however fast the machine.

The class is pickled by reference: its processes (the fault driver and the executors' Python
workers) import it from the repository's root, which the tests put on ``PYTHONPATH``.
"""

from __future__ import annotations

import time
from pathlib import Path

from workbench.events import Events
from workbench.operators import PTJoin
from workbench.records import Emitted


class GatedPTJoin(PTJoin):
    """:class:`~workbench.operators.PTJoin` whose batches wait until the file ``gate`` exists."""

    def __init__(self, gate: str | Path, **config: object) -> None:
        super().__init__(**config)
        self.gate = str(gate)

    def push_batch(self, batch: Events) -> Emitted:
        while not Path(self.gate).exists():
            time.sleep(0.05)
        return super().push_batch(batch)
