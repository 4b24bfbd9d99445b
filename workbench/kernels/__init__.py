"""Compiled batch kernels (numba) behind the streaming protocol's ``push_batch``.

Each module holds the hot loops of one algorithm family; the operators in
:mod:`workbench.operators` and :mod:`workbench.coalesce` call them with their state arrays and
configuration scalars, and stay the readable reference (``engine="python"``) the conformance
suite compares every kernel with.  Kernels are compiled with ``@njit(cache=True)``: the
machine code is kept on disk beside the module (or, where the package folder is read-only, in
numba's per-user cache or ``NUMBA_CACHE_DIR``), so a machine pays each compile once and later
processes load it; the benchmarks call :func:`workbench.experiments.warm_up` before timing
and report that first call.  Kernels are always called with the same dtypes (int64, float64,
bool), so each compiles to one signature.
"""
