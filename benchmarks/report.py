"""What every benchmark returns: its printed lines and the same figures as JSON
(``./dev bench <name> --json``), so that runs can be compared across commits; a long
benchmark's progress bar; the joins' figure table."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from workbench.kernels import compile_stats

__all__ = ["BenchReport", "Stages", "format_table"]


@dataclass(frozen=True)
class BenchReport:
    """A benchmark's printed lines and its figures, measured in one run.

    >>> r = BenchReport("demo", ("demo: 3 events/s",), {"events_per_s": np.float64(3.0)})
    >>> print(r)
    demo: 3 events/s
    >>> json.loads(r.to_json())["figures"]
    {'events_per_s': 3.0}
    """

    name: str
    lines: tuple[str, ...]
    figures: Mapping[str, Any]

    def __str__(self) -> str:
        return "\n".join(self.lines)

    def with_kernels(self) -> str:
        """The printed lines and what this process did with the compiled kernels."""
        stats = compile_stats()
        return (
            f"{self}\n  numba kernels in this run: {stats['loaded']} loaded from the on-disk "
            f"cache, {stats['compiled']} compiled (the first calls above include either)"
        )

    def to_json(self) -> str:
        """The figures with the benchmark's name and the machine's versions, as JSON."""
        import numba

        machine = {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "numba": numba.__version__,
            "cpus": os.cpu_count(),
        }
        doc = {
            "benchmark": self.name,
            "machine": machine,
            "kernels": compile_stats(),
            "figures": self.figures,
        }
        return json.dumps(doc, indent=2, default=_plain)


class Stages:
    """A long benchmark's progress on stderr (stdout carries its report): a ``tqdm.auto`` bar
    over its ``total`` stages whose description names the stage running (:meth:`begin`), with
    lines written above it (:meth:`write`); ``name`` prefixes both (a bench may change it
    between parts).  Use it as a context manager: the bar closes on exit, the last stage
    counted done unless an error ended it.  ``enabled`` False shows and writes nothing."""

    def __init__(self, name: str, total: int, enabled: bool = True) -> None:
        self.name = name
        self.bar = tqdm(total=total, desc=name, unit="stage", file=sys.stderr, disable=not enabled)
        self._running = False

    def begin(self, stage: str, total: int | None = None) -> None:
        """The previous stage is done; ``stage`` runs now (the bar's description); ``total``
        sets the number of stages when the caller learns it late."""
        if total is not None and total != self.bar.total:
            self.bar.total = total
        if self._running:
            self.bar.update()
        self._running = True
        self.bar.set_description(f"{self.name}: {stage}")

    def write(self, line: str) -> None:
        """A line above the bar (what a finished stage measured)."""
        if not self.bar.disable:
            self.bar.write(f"{self.name}: {line}", file=sys.stderr)

    def __enter__(self) -> Stages:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._running and kind is None:
            self.bar.update()
        self.bar.close()


def _plain(value: object) -> object:
    """NumPy scalars and arrays, frames and other values as JSON-ready Python values."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, pd.DataFrame):
        return value.to_dict(orient="records")
    return str(value)


COLUMNS = {
    "events": ("events", ",.0f"),
    "seconds": ("seconds", ".2f"),
    "events_per_s": ("events/s", ",.0f"),
    "response_ms": ("mean response ms", ",.2f"),
    "results": ("results", ",.0f"),
    "prob_evals": ("prob evals/event", ".1f"),
    "stime_lookups": ("stime lookups/event", ".1f"),
    "reuses": ("reuses/event", ".1f"),
    "exact_evals": ("rational evals", ",.0f"),
}
"""How each figure of :func:`~workbench.experiments.join_summary` is titled and formatted."""


def format_table(rows: Mapping[str, Mapping[str, float]], keys: Sequence[str]) -> str:
    """Rows of figures under right-aligned titles (:data:`COLUMNS`), one column per key.

    >>> print(format_table({"tight": {"results": 1234}}, ["results"]))
                          results
      tight                 1,234
    """
    cols = [(k, *COLUMNS[k], max(len(COLUMNS[k][0]), 11) + 2) for k in keys]
    first = max(14, *(len(name) for name in rows))
    lines = [f"  {'':{first}s}" + "".join(f"{title:>{w}s}" for _, title, _, w in cols)]
    for name, r in rows.items():
        cells = "".join(f"{format(r[k], fmt):>{w}s}" for k, _, fmt, w in cols)
        lines.append(f"  {name:{first}s}{cells}")
    return "\n".join(lines)
