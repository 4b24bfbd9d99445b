"""Compiled batch kernels (numba) behind the streaming protocol's ``push_batch``.

Each module holds the hot loops of one algorithm family; the operators in
:mod:`workbench.operators` and :mod:`workbench.coalesce` call them with bundles (named tuples or
tuples of their state arrays and configuration: inputs, state, parameters, outputs), and stay
the readable reference (``engine="python"``) the conformance suite compares every kernel with.
Kernels are compiled with ``@njit(cache=True)``: the machine code is kept on disk beside the
module (or, where the package folder is read-only, in numba's per-user cache or
``NUMBA_CACHE_DIR``), so a machine pays each compile once and later processes load it; the
benchmarks call :func:`workbench.experiments.warm_up` before timing and report that first call.
Kernels are always called with the same dtypes (int64, float64, bool), so each compiles to one
signature.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator

from numba.core.registry import CPUDispatcher

__all__ = ["compile_stats", "dispatchers"]


def dispatchers() -> Iterator[tuple[str, CPUDispatcher]]:
    """Every compiled function of the kernel modules, by ``module.name``."""
    for info in pkgutil.iter_modules(__path__, f"{__name__}."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if isinstance(obj, CPUDispatcher) and obj.__module__ == module.__name__:
                yield f"{info.name.rsplit('.', 1)[1]}.{name}", obj


def compile_stats() -> dict[str, int]:
    """How many kernel signatures this process loaded from the on-disk cache (``loaded``) and
    compiled (``compiled``) so far, and how many signatures it holds (``signatures``).

    >>> sorted(compile_stats())
    ['compiled', 'loaded', 'signatures']
    """
    stats = {"loaded": 0, "compiled": 0, "signatures": 0}
    for _, dispatcher in dispatchers():
        stats["loaded"] += sum(dispatcher.stats.cache_hits.values())
        stats["compiled"] += sum(dispatcher.stats.cache_misses.values())
        stats["signatures"] += len(dispatcher.signatures)
    return stats
