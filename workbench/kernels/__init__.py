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

Processes that compile at once (the test workers, Spark's Python workers, two servers) write
the same cache: numba updates a kernel's index by read, add, write, so two saves of different
signatures at once lost one entry, or gave two signatures the same data file (one then loaded
the other's machine code).  Importing this package makes numba's save hold an exclusive lock
on the index (:func:`_locked_save`), so saves of one kernel go one at a time.
"""

from __future__ import annotations

import fcntl
import functools
import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

from numba.core.caching import IndexDataCacheFile
from numba.core.registry import CPUDispatcher

__all__ = ["compile_stats", "dispatchers"]


def _locked_save(save: Callable[..., None]) -> Callable[..., None]:
    """numba's ``IndexDataCacheFile.save`` under an exclusive ``flock`` of ``<index>.lock``:
    the index is read, extended and written (and the new data file named) by one process at a
    time, so concurrent compiles keep every signature, each with its own data file."""

    @functools.wraps(save)
    def locked(self: IndexDataCacheFile, key: Any, data: Any) -> None:
        os.makedirs(self._cache_path, exist_ok=True)
        with open(f"{self._index_path}.lock", "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            save(self, key, data)

    locked.locked = True  # type: ignore[attr-defined]
    return locked


if not getattr(IndexDataCacheFile.save, "locked", False):
    IndexDataCacheFile.save = _locked_save(IndexDataCacheFile.save)


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
