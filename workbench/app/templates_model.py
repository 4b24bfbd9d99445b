"""The Templates tab's state and computation, no Panel: both streams' template histograms,
picked, generated (Example 5) or edited bucket by bucket, and a pair's exact probabilities
(PTJoin paper, Definitions 1, 3 and 4, Theorem 1).  The page is
:class:`~workbench.app.templates.TemplateEditor`'s."""

from __future__ import annotations

import numpy as np
import param

from workbench.data.streams import default_streams
from workbench.paper_examples import example3_templates
from workbench.probability import band_prob, ge_theorem1
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp

__all__ = ["SOURCES", "TemplatesModel", "format_buckets", "parse_buckets"]

SOURCES = ("Intel Lab (simulated), per mote", "PTJoin Example 3", "random (Example 5)")
"""Where the templates come from."""


def _ms(value: float) -> str:
    """A length in ms with sensible precision: whole ms from 100 ms, else three digits.

    >>> _ms(2017.0699), _ms(40.0), _ms(1.23456)
    ('2,017 ms', '40 ms', '1.23 ms')
    """
    return f"{value:,.0f} ms" if abs(value) >= 100 else f"{value:.3g} ms"


def format_buckets(h: HistogramTimestamp) -> str:
    """One ``lo, hi, p`` line per bucket (Definition 1's triples)."""
    return "\n".join(f"{lo:g}, {hi:g}, {p:.6g}" for lo, hi, p in h.buckets())


def parse_buckets(text: str) -> HistogramTimestamp:
    """A histogram from ``lo, hi, p`` lines; ValueError naming the line or the bad field.

    >>> parse_buckets("0, 20, 0.1\\n20, 30, 0.3\\n30, 40, 0.6").n_buckets
    3
    """
    triples = []
    for number, line in enumerate(text.strip().splitlines(), start=1):
        fields = [f for f in line.replace(",", " ").split() if f]
        if len(fields) != 3:
            raise ValueError(f"line {number}: {line!r} needs three numbers lo, hi, p")
        try:
            triples.append(tuple(float(f) for f in fields))
        except ValueError as exc:
            raise ValueError(f"line {number}: {line!r} holds a value that is not a number") from exc
    return HistogramTimestamp.from_buckets(triples)


class TemplatesModel(param.Parameterized):
    """Both streams' templates: pick one, generate a set, edit buckets, compare a pair (the
    parameters, the edits and the readouts)."""

    source = param.Selector(
        objects=list(SOURCES), default=SOURCES[0], doc="Where the templates come from."
    )
    count = param.Integer(
        20,
        bounds=(1, 200),
        label="templates each",
        doc="How many random templates Generate draws per stream (not the current count).",
    )
    n_buckets = param.Integer(
        10, bounds=(1, 40), label="buckets each", doc="Buckets per generated template."
    )
    max_length = param.Number(
        1000.0,
        bounds=(1.0, 20_000.0),
        label="longest (ms)",
        doc="Length of the longest generated template (its pi).",
    )
    seed = param.Integer(0, bounds=(0, None), doc="Seed of the random generator.")
    generate = param.Action(
        lambda self: self._generate_from_page(),
        doc="Draw random templates (Example 5) for both streams.",
    )
    stream = param.Selector(objects=["A", "B"], default="A", doc="Stream whose template to edit.")
    picked = param.Integer(0, bounds=(0, None), label="template", doc="Template index to edit.")
    buckets = param.String("", doc="The picked template's buckets, one 'lo, hi, p' per line.")
    apply = param.Action(lambda self: self._apply(), doc="Validate and store the edited buckets.")
    pair_u = param.Integer(0, bounds=(0, None), label="u (stream A)", doc="phi_u of the pair.")
    pair_v = param.Integer(0, bounds=(0, None), label="v (stream B)", doc="phi_v of the pair.")
    offset = param.Number(
        0.0,
        bounds=(-5000.0, 5000.0),
        label="t_det(b) - t_det(a) (ms)",
        doc="Detection time of the pair's b event relative to its a event.",
    )
    stream_a = param.ClassSelector(class_=TemplateSet, doc="Templates of stream A.")
    stream_b = param.ClassSelector(class_=TemplateSet, doc="Templates of stream B.")
    message = param.String("", doc="Outcome of the last edit (the validation message if any).")
    failed = param.Boolean(False, doc="Whether the last edit was rejected.")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        if self.stream_a is None or self.stream_b is None:
            self._load_source()
        self._bound_indices()

    @param.depends("source", watch=True)
    def _load_source(self) -> None:
        """Templates from the chosen source (the simulated deployment by default)."""
        if self.source == SOURCES[0]:
            a, b = default_streams().templates
        elif self.source == SOURCES[1]:
            phis = tuple(example3_templates())
            a, b = TemplateSet("A", phis), TemplateSet("B", phis)
        else:
            self._generate()
            return
        self.param.update(stream_a=a, stream_b=b)

    def _generate_from_page(self) -> None:
        """Generate, and show "random" as the source (a new source generates by itself)."""
        if self.source != SOURCES[2]:
            self.source = SOURCES[2]
        else:
            self._generate()

    def _generate(self) -> None:
        rng = np.random.default_rng(self.seed)
        a = random_templates(rng, self.count, self.n_buckets, self.max_length, name="A")
        b = random_templates(rng, self.count, self.n_buckets, self.max_length, name="B")
        self.param.update(stream_a=a, stream_b=b, message="", failed=False)

    @param.depends("stream_a", "stream_b", watch=True)
    def _bound_indices(self) -> None:
        last_a, last_b = len(self.stream_a) - 1, len(self.stream_b) - 1
        self.param.pair_u.bounds = (0, last_a)
        self.param.pair_v.bounds = (0, last_b)
        self.param.update(pair_u=min(self.pair_u, last_a), pair_v=min(self.pair_v, last_b))
        self._bound_picked()

    @param.depends("stream", watch=True)
    def _bound_picked(self) -> None:
        last = len(self._templates) - 1
        self.param.picked.bounds = (0, last)
        self.picked = min(self.picked, last)
        self._show_picked()

    @property
    def _templates(self) -> TemplateSet:
        return self.stream_a if self.stream == "A" else self.stream_b

    @param.depends("picked", watch=True)
    def _show_picked(self) -> None:
        self.buckets = format_buckets(self._templates[self.picked])

    def _apply(self) -> None:
        """Replace the picked template by the edited buckets, or report why they are invalid."""
        try:
            h = parse_buckets(self.buckets)
        except ValueError as exc:
            self.param.update(message=f"Rejected: {exc}", failed=True)
            return
        current = self._templates
        templates = list(current.templates)
        templates[self.picked] = h
        updated = TemplateSet(current.name, tuple(templates))
        name = "stream_a" if self.stream == "A" else "stream_b"
        self.param.update(
            {
                name: updated,
                "message": f"Stored phi_{self.picked} of stream {self.stream}: "
                f"{h.n_buckets} buckets, length {h.length:g} ms",
                "failed": False,
            }
        )

    def templates_of(self, name: str) -> TemplateSet:
        """Stream ``name``'s templates."""
        return self.stream_a if name == "A" else self.stream_b

    def bar_title(self, name: str) -> str:
        """Stream ``name``'s bar chart title: how many templates and the longest."""
        ts = self.templates_of(name)
        return f"Stream {ts.name}: {len(ts)} templates, longest pi = {_ms(ts.pi)}"

    def picked_of(self, name: str) -> int | None:
        """The picked template's index if stream ``name`` is being edited."""
        return self.picked if self.stream == name else None

    @param.depends("stream_a", "stream_b")
    def shown(self) -> str:
        """How many templates each stream holds now (whatever the generator's count says),
        in Markdown."""
        return "Now: " + "; ".join(
            f"stream {ts.name.split()[0]} **{len(ts)}** templates (pi = {_ms(ts.pi)})"
            for ts in (self.stream_a, self.stream_b)
        )

    def pair(self) -> tuple[HistogramTimestamp, HistogramTimestamp]:
        """The chosen pair as events: a detected at 0, b detected at ``offset``."""
        return self.stream_a.event(self.pair_u, 0.0), self.stream_b.event(self.pair_v, self.offset)

    def adjusted_title(self) -> str:
        """The adjusted histograms' title, with P(Xi >= Xj) of the pair (Theorem 1)."""
        hi, hj = self.pair()
        return (
            f"Adjusted histograms of phi_{self.pair_u} (A) and phi_{self.pair_v} (B): "
            f"P(Xi >= Xj) = {ge_theorem1(hi, hj):.3f}"
        )

    @param.depends("stream_a", "stream_b", "pair_u", "pair_v", "offset")
    def pair_summary(self) -> str:
        """Exact probabilities of the pair (Theorem 1 and the band probability), in
        Markdown."""
        hi, hj = self.pair()
        return (
            f"P(Xi >= Xj) = **{ge_theorem1(hi, hj):.4f}** (a occurred no earlier than b); "
            f"P(|Xi - Xj| <= pi_B) = **{band_prob(hi, hj, self.stream_b.pi):.4f}** "
            "(within pi_B of each other)"
        )

    @param.depends("message")
    def status(self) -> str:
        """The outcome of the last edit; a rejected edit shows its validation message."""
        return self.message or "Edit the picked template's buckets and press Apply."

    @param.depends("message", "failed")
    def status_kind(self) -> str:
        """The status's alert type: light before the first edit, then success or danger."""
        if not self.message:
            return "light"
        return "danger" if self.failed else "success"
