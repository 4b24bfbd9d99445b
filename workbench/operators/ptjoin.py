"""PTJoin: the probabilistic timing join over histogram timestamps (PTJoin paper, Section 3).

A pair (a_i, b_j) qualifies ``jc(d, delta)`` iff ``P(|Xi - Xj| <= d) >= delta``.  Three probe
strategies, one class:

- ``"naive"``: every buffered partner, exact band probability (the paper's straightforward
  method);
- ``"loose"``: the partitions of Eq. 4-6; SR joins without a test, PRs get the exact
  probability;
- ``"tight"``: Theorem 3's partitions from stime tables built at query installation; PR pairs
  are decided by Theorem 2 (one stime look-up, one comparison).  This fast path needs
  ``d >= max(pi_A, pi_B)`` (Lemma 2); below it the loose partitions and exact probabilities
  apply (the general path).

Buffers are max-time sorted; obsolete partners leave by Theorem 4 (tight, fast path) or by the
loose bound ``max(H) < now - D - pi - d`` (Eq. 4), at the envelope's most permissive values.
:class:`~workbench.operators.band.BandJoin` is the deterministic band join of the same buffers
with no probability test, the output-bound floor for benchmarks; both joins' kernels run under
the driver of :mod:`workbench.operators.band`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from workbench.decision import UNIT_ROUNDOFF, scratch
from workbench.events import Events
from workbench.kernels.ptjoin import LOOSE, NAIVE, TIGHT, ptjoin_batch
from workbench.operators.band import example_params, kernel_columns, run_kernel
from workbench.operators.base import JoinConfig, TwoStreamJoin
from workbench.operators.buffers import (
    kernel_state,
    partition_slice,
    rounding_margin,
    set_windows,
    widen,
)
from workbench.protocol import from_config
from workbench.records import Emitted
from workbench.stime import StimeTable
from workbench.stime_brackets import stime_brackets

__all__ = ["PTJoin", "PTJoinConfig", "ProbeMode"]

ProbeMode = Literal["naive", "loose", "tight"]
"""How PTJoin limits and decides the probing: every partner, Eq. 4-6, or Theorem 3."""


@dataclass(frozen=True, kw_only=True)
class PTJoinConfig(JoinConfig):
    """PTJoin's configuration: a join's (:class:`~workbench.operators.base.JoinConfig`) and
    the probe ``mode`` (Section 3: naive, loose Eq. 4-6, tight Theorem 3)."""

    mode: ProbeMode = "tight"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mode not in ("naive", "loose", "tight"):
            raise ValueError(f"mode = {self.mode!r} must be 'naive', 'loose' or 'tight'")


@dataclass(frozen=True, repr=False)
class _Direction:
    """Theorem 3 for arrivals of one stream: its StimeTable and per-template row extremes of
    the certified brackets (local: stime - max(phi_u)), the outer ends for the probing ranges
    and the inner ends for SR."""

    table: StimeTable
    inv_min: np.ndarray
    inv_max: np.ndarray
    sat_min: np.ndarray
    sat_max: np.ndarray
    reach: np.ndarray

    @classmethod
    def build(cls, table: StimeTable) -> _Direction:
        extremes = (
            table.inv_lo.min(axis=1),
            table.inv_hi.max(axis=1),
            table.sat_lo.min(axis=1),
            table.sat_hi.max(axis=1),
        )
        reach = np.max(np.abs(np.stack(extremes)), axis=0)  # magnitude for the rounding margin
        return cls(table, *extremes, reach)


class PTJoin(TwoStreamJoin[PTJoinConfig]):
    """PTJoin with jc(d, delta); ``mode`` picks the probing (see the module docstring).

    >>> from workbench.operators.base import StreamSpec
    >>> from workbench.paper_examples import example3_templates
    >>> spec = StreamSpec(example3_templates(), max_delay=30)
    >>> op = PTJoin(streams=(spec, spec), d=60, threshold=0.8, mode="tight")
    >>> op.push("A", 3, 0, t_det=210.0, arrival=212.0).b_ids.tolist()   # a3 by s1
    []
    >>> m = op.push("B", 2, 1, t_det=160.0, arrival=215.0)              # late: 160 + 30 < 215
    >>> m.status, m.late, op.counters.late
    ('late', (('B', 2, 1, 160.0, 215.0),), 1)
    >>> op.push("B", 5, 1, t_det=230.0, arrival=231.0).a_ids.tolist()   # SR of a3
    [3]
    """

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite (tests/test_conformance.py)."""
        return example_params(mode="tight")

    mode = from_config("mode", "The probe mode in force.")

    def _start(self) -> None:
        super()._start()
        self._directions: tuple[_Direction, _Direction] | None = None
        self._min_d = max(self.streams[0].pi, self.streams[1].pi)
        self._t_min = (np.nan, np.nan)
        if self.mode == "tight":
            self._build_directions()
            self._t_min = tuple(self._theorem4_t_min(s) for s in (0, 1))

    def _build_directions(self) -> None:
        """Theorem 3's stime tables of both directions at the threshold in force (built at
        query installation, Section 3; the tight mode only)."""
        if self.mode != "tight":
            return
        a, b = (s.templates for s in self.streams)
        self._directions = (
            _Direction.build(StimeTable.build(a, b, self.threshold, self._deciders[0])),
            _Direction.build(StimeTable.build(b, a, self.threshold, self._deciders[1])),
        )

    def _retune(self, new: PTJoinConfig) -> Emitted:
        """A steered threshold rebuilds the stime tables."""
        old = self.threshold
        out = super()._retune(new)
        if self.threshold != old:
            self._build_directions()
        return out

    def _theorem4_t_min(self, stream: int) -> float:
        """t_min of Theorem 4 for arrivals of ``stream``, at the envelope's lowest delta (a
        certified lower bound: the brackets' lower ends)."""
        delta_min = self.envelope.threshold_min
        if delta_min == self.threshold:
            return self._directions[stream].table.t_min
        own, other = self.streams[stream].templates, self.streams[1 - stream].templates
        _, inv_lo, _ = stime_brackets(own, other, 1 - Fraction(delta_min), side="left")
        low = float(inv_lo.min())
        return low - rounding_margin(low)

    @property
    def delta(self) -> float:
        """The confidence threshold delta."""
        return self.threshold

    @property
    def fast_path(self) -> bool:
        """Whether Theorem 2/3 apply now: tight mode and d >= max(pi_A, pi_B)."""
        return self.mode == "tight" and self.d >= self._min_d

    def _join(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Emitted:
        other = 1 - stream
        target = self.buffers[other]
        if self.mode == "naive":
            ok = self._band_ok(stream, template, t_det, target.templates, target.tmax)
            hits = target.ids[ok]
        elif self.fast_path:
            hits = self._tight(stream, template, t_det)
        else:
            hits = self._loose(stream, template, t_det, tmin)
        self._evict(other)
        self.buffers[stream].insert(event_id, template, t_det, tmin)
        return Emitted.pairs(stream, event_id, hits)

    def _join_batch(self, events: Events, tmin: np.ndarray, late: np.ndarray) -> np.ndarray:
        """The batch through the compiled kernel (:func:`~workbench.kernels.ptjoin.
        ptjoin_batch`); its flagged pairs decided exactly here, in their places."""
        config = self._kernel_config()
        mode = config[0]
        *columns, bounds = kernel_state(self.buffers)
        args = (kernel_columns(events), tmin, late, tuple(columns), bounds)
        progress, counts = np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64)
        pairs, flags, flag_m = run_kernel(
            lambda *out: ptjoin_batch(*args, *out, progress, counts, *config),
            progress,
            bounds,
            len(events),
            flagged=True,
        )
        set_windows(self.buffers, bounds)
        c = self._counters
        c.prob_evals += int(counts[0])
        c.stime_lookups += int(counts[1])
        c.obsolete_removed += int(counts[2])
        if not len(flags):
            return pairs
        pos, event, v = flags.T
        keep = np.ones(len(pairs), dtype=bool)
        stream = events.stream[event]
        for s in (0, 1):
            mine = stream == s
            if mine.any():
                decide = (
                    self._deciders[s].decide_exact if mode == TIGHT else self._deciders[s].decide
                )
                e = event[mine]
                keep[pos[mine]] = decide(
                    events.template[e],
                    events.t_det[e],
                    v[mine],
                    flag_m[mine],
                    self.d,
                    self.threshold,
                )
        return pairs[keep]

    def __getstate__(self) -> dict[str, object]:
        # the kernel's arguments are rebuilt after unpickling (unpickled tables are writable,
        # which would make the kernel compile a second signature)
        return {k: v for k, v in self.__dict__.items() if k != "_kernel_args"}

    def _kernel_config(self) -> tuple[object, ...]:
        """The kernel's arguments that only the configuration in force decides (built once
        per configuration: ``set_params`` replaces the configuration object)."""
        cached = self.__dict__.get("_kernel_args")
        if cached is not None and cached[0] is self._config:
            return cached[1]
        if self.mode == "naive":
            mode = NAIVE
        else:
            mode = TIGHT if self.fast_path else LOOSE
        env = self.envelope
        theorem4 = self.mode == "tight" and env.d_max >= self._min_d
        local = self._deciders[0].local
        config = (
            mode,
            (self.d, self.threshold, float(env.d_max), theorem4),
            (
                np.array(env.max_delay),
                np.array([s.pi for s in self.streams]),
                np.array(self._t_min, dtype=np.float64),
            ),
            tuple(lt.pack for lt in local),
            max(lt.n_buckets for lt in local),
            scratch(local),
            *self._kernel_tables(),
        )
        self._kernel_args = (self._config, config)
        return config

    def _kernel_tables(self) -> tuple[tuple[tuple[np.ndarray, ...], ...], ...]:
        """Both directions' stime brackets and row extremes (read-only placeholders off the
        tight mode: the kernel compiles once for every mode)."""
        if self._directions is None:
            dummy = np.zeros((1, 1))
            dummy.flags.writeable = False
            return ((dummy, dummy),) * 4, ((np.zeros(1),) * 2,) * 5
        tables = tuple(
            tuple(_read_only(getattr(direction.table, name)) for direction in self._directions)
            for name in ("inv_lo", "inv_hi", "sat_lo", "sat_hi")
        )
        rows = tuple(
            tuple(getattr(direction, name) for direction in self._directions)
            for name in ("inv_min", "inv_max", "sat_min", "sat_max", "reach")
        )
        return tables, rows

    def _loose(self, stream: int, template: int, t_det: float, tmin: float) -> np.ndarray:
        """Eq. 4-6: SR joins outright, the PRs are probed exactly."""
        target = self.buffers[1 - stream]
        pi_b, d = self.streams[1 - stream].pi, self.d
        margin = rounding_margin(t_det, d, pi_b, t_det - tmin)
        i_lh, i_sr, j_sr, j_rh = partition_slice(
            target.tmax, *widen(tmin - d, t_det - d + pi_b, tmin + d, t_det + d + pi_b, margin)
        )
        probe = np.r_[i_lh:i_sr, j_sr:j_rh]
        ok = self._band_ok(stream, template, t_det, target.templates[probe], target.tmax[probe])
        return np.concatenate((target.ids[i_sr:j_sr], target.ids[probe][ok]))

    def _tight(self, stream: int, template: int, t_det: float) -> np.ndarray:
        """Theorem 3's partitions; PR pairs decided by Eq. 9 (left) and Eq. 8 (right) against
        the certified brackets, the few inside a bracket by the exact band probability."""
        target = self.buffers[1 - stream]
        direction = self._directions[stream]
        table = direction.table
        d, u = self.d, template
        tmax = target.tmax
        margin = 16 * UNIT_ROUNDOFF * (abs(t_det) + d + direction.reach[u])
        i_lh, i_sr, j_sr, j_rh = partition_slice(
            tmax,
            direction.inv_min[u] + t_det - d - margin,
            direction.inv_max[u] + t_det - d + margin,
            direction.sat_min[u] + t_det + d - margin,
            direction.sat_max[u] + t_det + d + margin,
        )
        self._counters.stime_lookups += (i_sr - i_lh) + (j_rh - j_sr)
        templates, ids = target.templates, target.ids
        # Eq. 9 (left: join iff max(Hj) >= inv* + max(Hi) - d) and Eq. 8 (right: join iff
        # max(Hj) <= sat* + max(Hi) + d) against the bracket ends, each sum widened by its
        # rounding; a partner between "surely" and "maybe" is inside a bracket: exact band
        shift = 1.5 * margin
        parts = [ids[i_sr:j_sr]]
        for lo, hi, left in ((i_lh, i_sr, True), (j_sr, j_rh, False)):
            if lo == hi:
                continue
            v, m = templates[lo:hi], tmax[lo:hi]
            if left and m[-1] < t_det:
                join = m >= table.inv_hi[u][v] + (t_det - d + shift)
                maybe = m >= table.inv_lo[u][v] + (t_det - d - shift)
            elif not left and m[0] >= t_det:
                join = m <= table.sat_lo[u][v] + (t_det + d - shift)
                maybe = m <= table.sat_hi[u][v] + (t_det + d + shift)
            else:  # a range straddling max(Hi): the general comparison (Lemma 2's two cases)
                join, certain = table.verdicts(np.full(v.size, u), v, t_det, m, d)
                maybe = join | ~certain
            if np.count_nonzero(maybe) != np.count_nonzero(join):
                k = np.flatnonzero(maybe & ~join)
                join[k] = self._deciders[stream].decide_exact(
                    np.full(k.size, u), np.full(k.size, t_det), v[k], m[k], d, self.threshold
                )
            parts.append(ids[lo:hi][join])
        return np.concatenate(parts)

    def _eviction_bound(self, target: int) -> float:
        base = 1 - target
        env = self.envelope
        horizon = self.now - env.max_delay[base]  # no future base event ends before this
        pi = self.streams[base].pi
        margin = 16 * UNIT_ROUNDOFF * (abs(horizon) + env.d_max + pi)
        if self.mode == "tight" and env.d_max >= self._min_d:
            return horizon - env.d_max + self._t_min[base] - margin  # Theorem 4
        return horizon - self.streams[base].pi - env.d_max - margin  # Eq. 4: min(H_i) - d


def _read_only(table: np.ndarray) -> np.ndarray:
    """A read-only view: a table is read-only when built and writable once unpickled, and
    the kernel compiles for one of the two."""
    view = table.view()
    view.flags.writeable = False
    return view
