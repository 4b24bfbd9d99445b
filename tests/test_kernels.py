"""The compiled kernels compile once: every entry point normalises its inputs, so each kernel
holds one signature whatever the caller passes (ints or floats, strided slices, one record or
a batch), and later processes load it from numba's on-disk cache instead of compiling."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher
from test_conformance import OPERATORS, _batch, _make

from workbench.kernels import compile_stats, dispatchers


def _strided(batch):
    """The batch's rows through every other row of a twice-as-long batch: strided columns."""
    doubled = [np.repeat(col, 2) for col in batch.columns()]
    return type(batch)(*(col[::2] for col in doubled))


@pytest.mark.parametrize("seed", [0, 1])
def test_every_kernel_holds_one_signature(seed):
    for cls in OPERATORS:
        batch = _batch(cls, seed)
        op = _make(cls)
        half = len(batch) // 2
        op.push_batch(_strided(batch[:half]))
        for row in batch[half : half + 3].rows():
            op.push(*row)
        op.push_batch(batch[half + 3 :])
        op.flush()
    entry = _entry_points()
    assert len(entry) >= 8, entry  # ptjoin, band, interval, wjoin, coalesce, events kernels
    many = {n: d.signatures for n, d in dispatchers() if d in entry and len(d.signatures) > 1}
    assert many == {}, f"kernels compiled for more than one signature: {many}"


def _entry_points() -> list[CPUDispatcher]:
    """The kernels the package calls from Python (bound in a module outside
    ``workbench.kernels``); helpers called only from compiled code specialise per call site,
    once, inside their callers' compilation."""
    found = []
    for name, module in list(sys.modules.items()):
        if name.startswith("workbench.") and not name.startswith("workbench.kernels"):
            found += [v for v in vars(module).values() if isinstance(v, CPUDispatcher)]
    return found


def test_a_new_process_loads_the_kernels_from_the_disk_cache():
    test_every_kernel_holds_one_signature(0)  # compiled (or loaded) here: on disk now
    code = (
        "import sys; sys.path.insert(0, 'tests'); "
        "from test_kernels import test_every_kernel_holds_one_signature as run; run(0); "
        "from workbench.kernels import compile_stats; print(compile_stats())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    stats = eval(out.stdout.strip().splitlines()[-1])  # a dict of ints printed above
    assert stats["compiled"] == 0 and stats["loaded"] > 0, stats
    assert compile_stats()["signatures"] >= stats["loaded"]
