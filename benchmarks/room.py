"""``./dev bench room``: a room of users on one dashboard server, measured with browsers
(:mod:`benchmarks.room_browser`: headless Chromium, what a person sees) or with protocol-level
clients (:mod:`benchmarks.room_protocol`: Bokeh's websocket protocol, the server measured
alone)."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.report import BenchReport

__all__ = ["bench_room"]


def bench_room(
    sessions: Sequence[int] | None = None,
    moves: int = 3,
    cycles: int = 20,
    floor: bool = False,
    think: float = 0.0,
    procs: int = 1,
    clients: str = "browser",
    by_kind: bool = False,
) -> BenchReport:
    """The room of ``clients``: ``browser`` (:func:`~benchmarks.room_browser.
    bench_browser_room`: rooms of 1 and 8 by default, then ``cycles`` open/close cycles) or
    ``protocol`` (:func:`~benchmarks.room_protocol.bench_protocol_room`: rooms of 1, 8 and 32
    by default, no open/close cycles); the other arguments are theirs.  ``by_kind`` (protocol
    clients only): the server's CPU by kind of interaction against the floor's instead
    (:func:`~benchmarks.room_kinds.bench_room_kinds`, one user at a time)."""
    if by_kind:
        if clients != "protocol":
            raise ValueError(f"by_kind needs clients = 'protocol', not {clients!r}")
        from benchmarks.room_kinds import bench_room_kinds

        return bench_room_kinds(moves=moves)
    if clients == "protocol":
        from benchmarks.room_protocol import bench_protocol_room  # no browser needed

        return bench_protocol_room(sessions or (8, 32), moves, floor, think, procs)
    if clients != "browser":
        raise ValueError(f"clients = {clients!r} must be 'browser' or 'protocol'")
    from benchmarks.room_browser import bench_browser_room  # Playwright loads here

    return bench_browser_room(sessions, moves, cycles, floor, think, procs)
