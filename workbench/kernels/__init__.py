"""Compiled batch kernels (numba) behind the streaming protocol's ``push_batch``.

Each module holds the hot loops of one algorithm family; the operators in
:mod:`workbench.operators` and :mod:`workbench.coalesce` call them with their state arrays and
configuration scalars, and stay the readable reference (``engine="python"``) the conformance
suite compares every kernel with.  Kernels are compiled with ``@njit(cache=True)``: the
machine code is kept on disk beside the module (or in ``NUMBA_CACHE_DIR``), so a process pays
the compile only once per machine; :func:`warm_up` compiles them all ahead of timed work.
"""
