"""The tuples the paper's FEW holds while its mode 1 waits for a tuple of every stream (W-join
paper, Section 3.2), as arrays the compiled kernel writes too (``kernels.wjoin._hold``,
``_release``)."""

from __future__ import annotations

import numpy as np

from workbench.operators.wbuffers import Tuple

__all__ = ["HeldTuples"]


class HeldTuples:
    """The tuples the paper's FEW holds, unjoined, while mode 1 waits for a tuple of every
    stream (W-join Section 3.2), in arrival order: ``ints[k]`` = (stream, seq, id, key) and
    ``times[k]`` = (ts, arrival) of the k-th, ``count[s]`` how many of stream s.  The
    compiled kernel (``kernels.wjoin._hold``, ``_release``) writes the same arrays.

    >>> held = HeldTuples(2)
    >>> held.hold(0, (5.0, 0, 10, 1), arrival=5.0)
    >>> len(held), held.complete()
    (1, False)
    >>> held.hold(1, (6.0, 1, 11, 1), arrival=6.5)
    >>> held.complete(), [(s, item[2], arrival) for s, item, arrival in held.release()]
    (True, [(0, 10, 5.0), (1, 11, 6.5)])
    >>> len(held)
    0
    """

    def __init__(self, m: int, capacity: int = 16) -> None:
        self.ints = np.zeros((capacity, 4), np.int64)
        self.times = np.zeros((capacity, 2))
        self.count = np.zeros(m, np.int64)

    def __len__(self) -> int:
        return int(self.count.sum())

    def reserve(self, n: int) -> None:
        """Room for ``n`` more held tuples (doubled when full)."""
        held, cap = len(self), len(self.ints)
        if held + n <= cap:
            return
        new = max(2 * cap, held + n)
        for name in ("ints", "times"):
            old = getattr(self, name)
            grown = np.zeros((new, old.shape[1]), old.dtype)
            grown[:held] = old[:held]
            setattr(self, name, grown)

    def hold(self, s: int, item: Tuple, arrival: float) -> None:
        """Hold tuple ``item`` of stream s, arrived at ``arrival``.  Mirrors
        ``kernels.wjoin._hold``."""
        self.reserve(1)
        k = len(self)
        self.ints[k] = (s, *item[1:])
        self.times[k] = (item[0], arrival)
        self.count[s] += 1

    def complete(self) -> bool:
        """Whether a tuple of every stream is held: mode 1's wait is over."""
        return bool((self.count > 0).all())

    def release(self) -> list[tuple[int, Tuple, float]]:
        """Every held tuple, in arrival order, as (stream, tuple, arrival); none left held."""
        n = len(self)
        out = [
            (s, (ts, seq, event_id, key), arrival)
            for (s, seq, event_id, key), (ts, arrival) in zip(
                self.ints[:n].tolist(), self.times[:n].tolist(), strict=True
            )
        ]
        self.count[:] = 0
        return out
