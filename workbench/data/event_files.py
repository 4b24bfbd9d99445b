"""Event files a Spark job reads: the events of two streams and their templates on disk.

A folder holds ``streams.json`` (each stream's name, network delay bound D and histogram
templates, PTJoin Definitions 4-6; floats written so that they read back bit for bit) and
``events/``, the events (:data:`~workbench.events.COLUMNS`) as Parquet, JSON lines or CSV
files: what ``workbench spark join --input FOLDER`` runs on.  :func:`write_event_folder`
makes one from any :class:`~workbench.data.streams.ReplayedStreams`; a user's own events need
only their templates in ``streams.json`` beside them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

from workbench.events import Events
from workbench.operators.base import StreamSpec
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

__all__ = [
    "EVENT_FORMATS",
    "STREAMS_FILE",
    "EventFormat",
    "read_stream_specs",
    "specs_from_json",
    "specs_to_json",
    "write_event_folder",
]

EventFormat = Literal["parquet", "json", "csv"]
EVENT_FORMATS: tuple[EventFormat, ...] = ("parquet", "json", "csv")
STREAMS_FILE = "streams.json"


def specs_to_json(specs: tuple[StreamSpec, StreamSpec]) -> dict[str, object]:
    """Both streams' names, D and templates (edges and probabilities) as JSON data."""
    return {
        "streams": [
            {
                "name": s.templates.name,
                "max_delay": s.max_delay,
                "templates": [
                    {"edges": t.edges.tolist(), "probs": t.probs.tolist()} for t in s.templates
                ],
            }
            for s in specs
        ]
    }


def specs_from_json(data: dict[str, object]) -> tuple[StreamSpec, StreamSpec]:
    """The streams of :func:`specs_to_json`'s data (checked: a bad field raises, named)."""
    streams = data.get("streams") if isinstance(data, dict) else None
    if not (isinstance(streams, list) and len(streams) == 2):
        raise ValueError(f"streams = {streams!r:.80}: expected a list of two streams")
    specs = []
    for k, s in enumerate(streams):
        try:
            templates = tuple(HistogramTimestamp(t["edges"], t["probs"]) for t in s["templates"])
            spec = StreamSpec(TemplateSet(str(s["name"]), templates), s["max_delay"])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"streams[{k}] lacks a name, max_delay or templates: {exc}") from exc
        except ValueError as exc:
            raise ValueError(f"streams[{k}]: {exc}") from exc
        specs.append(spec)
    return specs[0], specs[1]


def read_stream_specs(path: str | os.PathLike[str]) -> tuple[StreamSpec, StreamSpec]:
    """The streams of a ``streams.json`` file, or of the one in folder ``path``."""
    path = Path(path)
    if path.is_dir():
        path = path / STREAMS_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"no {STREAMS_FILE} at {path}: the templates and D of both streams go there "
            "(workbench spark prepare writes one)"
        )
    return specs_from_json(json.loads(path.read_text()))


def write_event_folder(
    folder: str | os.PathLike[str],
    specs: tuple[StreamSpec, StreamSpec],
    events: Events,
    fmt: EventFormat = "parquet",
) -> Path:
    """Write ``streams.json`` and ``events/`` (one ``fmt`` file) under ``folder``; returns it.

    >>> import tempfile
    >>> from workbench.data.streams import synthetic_streams
    >>> rep = synthetic_streams()
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_event_folder(tmp, rep.specs(), rep.events)
    ...     read_stream_specs(out) == rep.specs(), sorted(p.name for p in out.iterdir())
    (True, ['events', 'streams.json'])
    """
    if fmt not in EVENT_FORMATS:
        raise ValueError(f"format = {fmt!r} must be one of {EVENT_FORMATS}")
    folder = Path(folder)
    (folder / "events").mkdir(parents=True, exist_ok=True)
    (folder / STREAMS_FILE).write_text(json.dumps(specs_to_json(specs)))
    frame = events.to_frame()
    target = folder / "events" / f"part-0.{'jsonl' if fmt == 'json' else fmt}"
    if fmt == "parquet":
        frame.to_parquet(target, index=False)
    elif fmt == "json":
        rows = frame.to_dict("records")  # Python floats: json writes them exactly (repr)
        target.write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        frame.to_csv(target, index=False, float_format="%.17g")
    return folder
