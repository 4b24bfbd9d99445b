"""The window rule of the coalescing paper (Section 2.1) stated directly, for the extent,
adaptive-coalescing and conformance tests."""

from __future__ import annotations

from workbench.coalesce import Window


class WindowOracle:
    """The window rule stated directly: accepted tuples, top-w or within T of the newest."""

    def __init__(self, window: Window) -> None:
        self.window, self.accepted, self.seq = window, [], 0

    def push(self, ts, value, group):
        key = (float(ts), self.seq)
        self.seq += 1
        keys = sorted((a[0], a[1]) for a in self.inside())
        if self.window.kind == "tuples":
            late = len(keys) >= self.window.size and key < keys[0]
        else:
            t_max = max([k[0] for k in keys] + [key[0]]) if keys else key[0]
            late = key[0] < t_max - self.window.size
        if not late:
            self.accepted.append((key[0], key[1], group, value))
        return not late

    def inside(self):
        rows = sorted(self.accepted, key=lambda r: (r[0], r[1]))
        if not rows:
            return []
        if self.window.kind == "tuples":
            return rows[-int(self.window.size) :]
        t_max = max(r[0] for r in rows)
        return [r for r in rows if r[0] >= t_max - self.window.size]
