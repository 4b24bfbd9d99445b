"""The conformance suite: every streaming operator and window extent speaks the protocol
(:mod:`workbench.protocol`), and every value type survives pickling.

Operators are found, not listed (River's ``check_estimator`` pattern): every concrete
subclass of :class:`~workbench.protocol.StreamOperator` anywhere in the package, each of one
shape (a :class:`~workbench.protocol_shapes.JoinOperator` or an
:class:`~workbench.protocol_shapes.ExtentOperator`), is checked for pickling mid-stream,
rebuilding from its configuration, ``push`` one by one == ``push_batch`` for any split into
batches, a runnable docstring example and equality with its family's oracle.  A new operator
without ``conformance_params`` or outside a known family fails the suite.  The protocol itself
stays small: every shape asks at most three methods of an operator, and every operator is
built from the configuration type it is generic over.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import itertools
import pickle
import pkgutil
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pytest

import workbench
from tests.support.window_oracle import WindowOracle
from workbench.coalesce.adaptive import AdaptiveCoalescing, Records
from workbench.coalesce.window import WindowExtent, recoalesce
from workbench.data.synthetic import synthetic_events
from workbench.events import COLUMNS, Events, sort_pairs
from workbench.operators.band import BandJoin
from workbench.operators.base import TwoStreamJoin
from workbench.operators.oracle import brute_force_join, brute_force_wjoin, on_time
from workbench.operators.wjoin import MultiWayJoin
from workbench.paper_examples import example3_templates
from workbench.partitions import loose_partitions
from workbench.protocol import C, StreamOperator
from workbench.protocol_shapes import ExtentOperator, JoinOperator
from workbench.records import Columns, Emitted
from workbench.stime import StimeTable

# -- value types ------------------------------------------------------------------------------


def _values():
    a, b = example3_templates()
    table = StimeTable.build(example3_templates(), example3_templates(), 0.8)
    return [
        a,
        example3_templates(),
        table,
        loose_partitions(a, 60, 40),
        workbench.interval_bounds(0, 10, 20, 0.5, 10),
    ]


@pytest.mark.parametrize("value", _values(), ids=lambda v: type(v).__name__)
def test_pickle_round_trip(value):
    back = pickle.loads(pickle.dumps(value))
    if isinstance(value, StimeTable):
        np.testing.assert_array_equal(back.sat, value.sat)
        np.testing.assert_array_equal(back.inv, value.inv)
        assert back.templates_a == value.templates_a and back.delta == value.delta
    else:
        assert back == value


@pytest.mark.parametrize("name", workbench.__all__)
def test_public_api_is_documented_with_an_example(name):
    obj = getattr(workbench, name)
    doc = inspect.getdoc(obj) or ""
    assert doc, f"{name} has no docstring"
    assert ">>>" in doc, f"{name} has no runnable example"


# -- finding the operators -------------------------------------------------------------------


SERVER_SETUP = "workbench.app.server_setup"
"""The script ``panel serve --setup`` runs at a dashboard server's start: importing it starts
the server (Spark, every tab warmed); it defines no operator."""


def _import_package() -> None:
    """Import every module of the package (the server's start script apart), so that every
    operator class is defined."""
    for info in pkgutil.walk_packages(workbench.__path__, "workbench."):
        if info.name != SERVER_SETUP:
            importlib.import_module(info.name)


def _concrete(base: type) -> list[type]:
    """The package's concrete subclasses of ``base`` (not the tests' own, such as
    ``tests/support/gated_join.py``)."""
    found, todo = set(), [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if not inspect.isabstract(sub) and sub.__module__.startswith("workbench."):
                found.add(sub)
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


_import_package()
OPERATORS = _concrete(StreamOperator)
SHAPES = sorted(
    {base for cls in OPERATORS for base in cls.__mro__ if inspect.isabstract(base)},
    key=lambda c: (c.__module__, c.__qualname__),
)
"""The abstract classes the operators derive from: the protocol, its shapes and families."""


# -- the families: a stream generator and an oracle each ---------------------------------------


def _run(op: StreamOperator, batch: Columns) -> Emitted:
    """Everything an operator emits for a batch, then the end of its streams."""
    return Emitted.concat([op.push_batch(batch), op.flush()], op.arity)


def _two_stream_batch(config, rng):
    a, b = config.streams
    gap = max(a.pi, b.pi, config.d, 1.0) / 2
    return synthetic_events(
        rng,
        40,
        (len(a.templates), len(b.templates)),
        mean_interarrival=gap,
        max_delay=(a.max_delay, b.max_delay),
        late_fraction=0.1,
    )


def _band_join(events, config):
    """The deterministic band join's oracle: every on-time pair with |t_det_a - t_det_b| <= d."""
    ok = on_time(events, config.max_delay)
    a, b = (ok & (events.stream == s) for s in (0, 1))
    near = np.abs(events.t_det[a][:, None] - events.t_det[b][None, :]) <= config.d
    ia, ib = np.nonzero(near)
    return sort_pairs(np.column_stack((events.id[a][ia], events.id[b][ib])))


def _two_stream_oracle(op, events):
    config = op.config
    out = _run(op, events)
    if isinstance(op, BandJoin):
        expected = _band_join(events, config)
    else:
        expected = brute_force_join(events, config.streams, config.d, config.threshold)
    np.testing.assert_array_equal(sort_pairs(out.ids), expected)
    late = ~on_time(events, [s.max_delay for s in config.streams])
    rows = zip(events.rows(), late, strict=True)
    assert out.late == tuple(row for row, is_late in rows if is_late)
    assert op.counters.late == int(late.sum()) and op.counters.results_out == len(out)


def _wjoin_batch(config, rng):
    rows = []
    for s in range(config.constraints.m):
        ts = np.cumsum(rng.exponential(3.0, 8))
        delay = rng.uniform(0, config.max_delay[s], 8)
        late = rng.random(8) < 0.1
        delay[late] = config.max_delay[s] + rng.uniform(0.5, 5.0, int(late.sum()))
        values = rng.integers(0, 2, 8)
        rows += [(ts[k] + delay[k], s, 100 * s + k, int(values[k]), ts[k]) for k in range(8)]
    rows.sort()
    arrival, stream, ids, values, ts = (np.array(col) for col in zip(*rows, strict=True))
    return (stream, ids, values, ts, arrival)


def _wjoin_oracle(op, batch):
    config = op.config
    out = _run(op, batch)
    m = config.constraints.m
    values, stamps, ids = ([[] for _ in range(m)] for _ in range(3))
    late_rows = []
    for row in batch.rows():
        stream, event_id, value, ts, arrival = row
        if arrival > ts + config.max_delay[stream]:
            late_rows.append(row)
            continue
        values[stream].append(value)
        stamps[stream].append(ts)
        ids[stream].append(event_id)
    expected = brute_force_wjoin(values, stamps, ids, config.constraints, config.predicate)
    got = [tuple(r) for r in out.ids.tolist()]
    assert len(got) == len(set(got)) and set(got) == expected
    assert out.late == tuple(late_rows) and op.counters.late == len(late_rows)


def _extent_batch(config, rng):
    n = 60
    ts = np.arange(n, dtype=np.float64) + rng.integers(-4, 5, n)  # out of order, ties
    values = rng.choice([80, 81, 82], n, p=[0.6, 0.3, 0.1])
    groups = rng.integers(0, 3, n)
    return (ts, values, groups)


def _full(view, seq=True):
    return [(c.ts, c.seq if seq else 0, c.te, c.group, c.value, c.count) for c in view]


def _extent_oracle(op, batch):
    """The view checked against :func:`recoalesce` of the window's raw tuples (the window
    rule stated directly) after every arrival."""
    window = WindowOracle(op.config.window)
    for row in batch.rows():
        out = op.push(*row)
        assert out.late == (() if window.push(*row) else (row,)), row
        want = recoalesce(window.inside(), op.config.equivalence)
        assert _full(op.view()) == _full(want), row


def _records_batch(config, rng):
    ts, values, groups = _extent_batch(config, rng)
    rows = [{"value": int(v), "group": int(g)} for v, g in zip(values, groups, strict=True)]
    return Records(ts, np.array(rows, dtype=object))


def _adaptive_oracle(op, batch):
    """Every query's view against :func:`recoalesce` of its projection of the window."""
    window = WindowOracle(op.config.window)
    for row in batch.rows():
        out = op.push(*row)
        assert out.late == (() if window.push(row[0], row[1], None) else (row,)), row
        for q in op.config.queries:
            raw = [(ts, seq, *q.project(r)) for ts, seq, _, r in window.inside()]
            # a rebuilt extent numbers its arrivals anew (in the same order): seq aside
            got, want = op.view(q.name), recoalesce(raw, q.equivalence)
            assert _full(got, seq=False) == _full(want, seq=False), row


def _views(op):
    return {name: _full(op.view(name)) for name in op.queries}


@dataclass(frozen=True)
class Family:
    """How to feed and judge the operators derived from one base class."""

    base: type
    batch: Callable  # (config, rng) -> a batch, or its columns in push order
    oracle: Callable[[StreamOperator, Columns], None]
    state: Callable[[StreamOperator], object] = lambda op: None


FAMILIES = (
    Family(TwoStreamJoin, _two_stream_batch, _two_stream_oracle),
    Family(MultiWayJoin, _wjoin_batch, _wjoin_oracle),
    Family(WindowExtent, _extent_batch, _extent_oracle, lambda op: _full(op.view())),
    Family(AdaptiveCoalescing, _records_batch, _adaptive_oracle, _views),
)


def _family(cls: type) -> Family:
    for family in FAMILIES:
        if issubclass(cls, family.base):
            return family
    raise AssertionError(
        f"{cls.__qualname__} is a StreamOperator of no known family: add one to FAMILIES"
    )


ENGINES = ("compiled", "python")


def _make(cls: type, engine: str = "compiled") -> StreamOperator:
    return cls(**cls.conformance_params(), engine=engine)


def _batch(cls: type, seed: int) -> Columns:
    batch = _family(cls).batch(_make(cls).config, np.random.default_rng(seed))
    return batch if isinstance(batch, Columns) else cls.batch_type(*batch)


def _splits(rng: np.random.Generator, n: int) -> list[int]:
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(4, n - 1), replace=False))
    return [0, *cuts.tolist(), n]


# -- the checks --------------------------------------------------------------------------------


def test_the_suite_finds_every_family():
    names = {cls.__name__ for cls in OPERATORS}
    assert {"PTJoin", "BandJoin", "EagerCorrelation", "LazyLookupCorrelation"} <= names
    assert {"BEWJoin", "FEWJoin", "EagerExtent", "LazyExtent", "AdaptiveCoalescing"} <= names
    assert "ArrayExtent" in names  # the paper's mechanism of the eager extent


@pytest.mark.parametrize("shape", SHAPES, ids=lambda c: c.__qualname__)
def test_a_shape_asks_at_most_three_methods(shape):
    """What a new operator of a shape must write is at most three abstract methods (the rest
    is derived in the shape), and the protocol's methods pass no ``Any`` between them."""
    assert StreamOperator in SHAPES and len(SHAPES) >= 6
    assert len(shape.__abstractmethods__) <= 3, sorted(shape.__abstractmethods__)
    for name, method in vars(shape).items():
        if callable(method):
            annotations = inspect.get_annotations(method)
            assert "Any" not in repr(annotations), f"{shape.__qualname__}.{name}: {annotations}"


def _generic_config(cls: type) -> type | None:
    """The configuration class that ``cls`` (or its nearest generic base) is parametrized
    with."""
    for klass in cls.__mro__:
        for base in klass.__dict__.get("__orig_bases__", ()):
            args = typing.get_args(base)
            if args and isinstance(args[0], type):
                return args[0]
    return None


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
def test_is_built_from_its_configuration_type(cls):
    """The constructor takes the configuration type the class is generic over (its first
    argument), or that configuration's fields; ``config_type`` is that generic argument."""
    assert _generic_config(cls) is cls.config_type
    config_param = list(inspect.signature(cls.__init__).parameters.values())[1]
    assert config_param.name == "config"
    assert config_param.kind is inspect.Parameter.POSITIONAL_ONLY
    annotation = typing.get_type_hints(cls.__init__)["config"]
    assert {C, cls.config_type} & set(typing.get_args(annotation)), annotation
    config = cls(**cls.conformance_params()).config
    assert isinstance(config, cls.config_type) and cls(config).config is config
    assert cls(config, on_bad="count").config == replace(config, on_bad="count")
    with pytest.raises(ValueError, match="config = "):
        cls(object())


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
def test_steering_goes_through_the_configuration(cls):
    """Every steerable name is one the configuration's ``steered`` maps: steering to the values
    in force emits nothing and leaves the configuration as it was."""
    op = _make(cls)
    for name in sorted(cls.steerable):
        value = getattr(op.config, name)
        assert op.config.steered(**{name: value}) == op.config, name
        assert op.set_params(**{name: value}) == Emitted.none(op.arity), name
    assert op.config == _make(cls).config


def test_the_engine_is_read_in_one_place():
    """The Python-or-compiled choice is ``StreamOperator._compiled``: no operator module
    reads the configuration's ``engine`` itself."""
    bases = {base for cls in OPERATORS for base in cls.__mro__}
    modules = {sys.modules[b.__module__] for b in bases if b.__module__.startswith("workbench.")}
    readers = [m.__name__ for m in modules if ".engine" in inspect.getsource(m)]
    assert readers == ["workbench.protocol"]
    source = inspect.getsource(sys.modules["workbench.protocol"])
    assert source.count("_config.engine") == 1
    assert "_config.engine" in inspect.getsource(StreamOperator._compiled)


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
def test_is_a_join_or_an_extent(cls):
    """Joins emit tuples of event ids; extents emit none (their output is ``view()``)."""
    assert issubclass(cls, JoinOperator) != issubclass(cls, ExtentOperator), cls.__qualname__
    op = cls(**cls.conformance_params())
    if issubclass(cls, JoinOperator):
        assert op.arity >= 2
    else:
        assert op.arity == 0 and callable(op.view)


@pytest.mark.parametrize("cls", [c for c in OPERATORS if issubclass(c, WindowExtent)])
def test_an_extents_oldest_is_the_first_key_of_its_view(cls):
    """Each extent answers ``oldest()`` from its own arrays; the shape's reference answer
    reads the view: the two agree after every arrival."""
    op = _make(cls)
    assert op.oldest() is None and WindowExtent.oldest(op) is None
    for row in _batch(cls, 14).rows():
        op.push(*row)
        assert op.oldest() == WindowExtent.oldest(op), row


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
def test_declares_its_configuration_and_batch(cls):
    _family(cls)
    params = cls.conformance_params()
    op = cls(**params)
    assert _frozen(op.config), f"{cls.__qualname__}.config is not a frozen dataclass"
    assert isinstance(op.config, cls.config_type)
    assert issubclass(cls.batch_type, Columns)
    assert op.set_params() == Emitted.none(op.arity) and op.config == cls(**params).config


def _frozen(value: object) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return bool(params and params.frozen)


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
def test_docstring_example_runs(cls):
    module = sys.modules[cls.__module__]
    tests = doctest.DocTestFinder(recurse=False).find(cls, cls.__name__, module=module)
    examples = [t for t in tests if t.examples]
    assert examples, f"{cls.__qualname__} has no runnable example in its docstring"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in examples:
        runner.run(test)
    assert runner.failures == 0, f"{cls.__qualname__}'s docstring example fails"


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
@pytest.mark.parametrize("engine", ENGINES)
def test_push_one_by_one_equals_push_batch(engine, cls, seed):
    batch = _batch(cls, seed)
    one = _make(cls, engine)
    singles = Emitted.concat([one.push(*row) for row in batch.rows()], one.arity)
    many = _make(cls, engine)
    bounds = _splits(np.random.default_rng(seed), len(batch))
    parts = [many.push_batch(batch[i:j]) for i, j in itertools.pairwise(bounds)]
    assert Emitted.concat(parts, many.arity) == singles
    state = _family(cls).state
    assert state(many) == state(one)
    assert many.flush() == one.flush() and many.counters == one.counters


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
@pytest.mark.parametrize("engine", ENGINES)
def test_pickles_mid_stream(engine, cls):
    batch = _batch(cls, 3)
    half = len(batch) // 2
    op = _make(cls, engine)
    op.push_batch(batch[:half])
    back = pickle.loads(pickle.dumps(op))
    assert back.counters == op.counters and back.config == op.config
    state = _family(cls).state
    assert state(back) == state(op)
    assert _run(back, batch[half:]) == _run(op, batch[half:])
    assert back.counters == op.counters


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
@pytest.mark.parametrize("engine", ENGINES)
def test_clone_rebuilds_from_the_configuration(engine, cls):
    batch = _batch(cls, 4)
    op = _make(cls, engine)
    op.push_batch(batch[: len(batch) // 2])
    fresh = op.clone()
    assert type(fresh) is cls and fresh.config == op.config and fresh.config.engine == engine
    assert fresh.counters == _make(cls, engine).counters
    assert _run(fresh, batch) == _run(_make(cls, engine), batch)


JOINS = [cls for cls in OPERATORS if issubclass(cls, JoinOperator)]


@pytest.mark.parametrize("cls", JOINS, ids=lambda c: c.__qualname__)
@pytest.mark.parametrize("engine", ENGINES)
def test_restart_flushes_then_runs_like_a_fresh_operator(engine, cls):
    """``restart`` (one operator per Spark time range) emits what ``flush`` would, then joins
    the next stream, from the beginning of time, as a new operator does."""
    first, second = _batch(cls, 12), _batch(cls, 13)
    op, twin = _make(cls, engine), _make(cls, engine)
    op.push_batch(first)
    twin.push_batch(first)
    assert op.restart() == twin.flush()
    assert op.counters == _make(cls, engine).counters
    assert _run(op, second) == _run(_make(cls, engine), second)


@pytest.mark.parametrize("seed", [5, 6])
@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
@pytest.mark.parametrize("engine", ENGINES)
def test_equals_its_oracle(engine, cls, seed):
    _family(cls).oracle(_make(cls, engine), _batch(cls, seed))


@pytest.mark.parametrize("seed", [7, 8, 9, 10])
@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__qualname__)
def test_compiled_kernel_equals_the_python_reference(cls, seed):
    """The kernel behind ``push_batch`` against the readable per-record path: the same
    emissions, state and counters for random splits into batches."""
    batch = _batch(cls, seed)
    reference = _make(cls, "python")
    want = _run(reference, batch)
    kernel = _make(cls, "compiled")
    bounds = _splits(np.random.default_rng(seed), len(batch))
    parts = [kernel.push_batch(batch[i:j]) for i, j in itertools.pairwise(bounds)]
    state = _family(cls).state
    assert Emitted.concat([*parts, kernel.flush()], kernel.arity) == want
    assert state(kernel) == state(reference) and kernel.counters == reference.counters


TWO_STREAM = [cls for cls in OPERATORS if issubclass(cls, TwoStreamJoin)]


@pytest.mark.parametrize("cls", TWO_STREAM, ids=lambda c: c.__qualname__)
def test_bad_events_are_found_alike_by_both_engines(cls):
    """Bad rows in a batch (unknown stream or template, non-finite or unfaithful time, an
    arrival before detection or before the clock) are counted with the same reasons, and the
    rows around them joined alike, by the kernel's vectorised screening and the reference."""
    batch = _batch(cls, 11)
    cols = {name: col.copy() for name, col in zip(COLUMNS, batch.columns(), strict=True)}
    cols["stream"][3] = 2
    cols["template"][5] = 99
    cols["t_det"][7] = np.inf  # (NaN would be bad too, but unequal to itself in the check)
    cols["t_det"][9] = 1e300
    cols["t_det"][11] = cols["arrival"][11] + 1.0
    bad = Events(*cols.values())
    late_clock = Events(*(col[:3] for col in bad.columns()))  # arrives before the clock
    runs = {}
    for engine in ENGINES:
        op = cls(**cls.conformance_params(), engine=engine, on_bad="count")
        out = [op.push_batch(bad[:20]), op.push_batch(bad[20:]), op.push_batch(late_clock)]
        runs[engine] = (Emitted.concat([*out, op.flush()], 2), op.counters)
    assert runs["compiled"] == runs["python"]
    emitted, counters = runs["python"]
    assert counters.bad == 5 + 3 and len(emitted.bad) == 8
    assert "stream = 2" in emitted.bad[0][1] and "earlier than the clock" in emitted.bad[-1][1]


PAPER_MECHANISMS = [cls for cls in OPERATORS if issubclass(cls, MultiWayJoin)]
"""Operators with a ``mechanism`` (fast or the paper's), checked with the paper's too."""


@pytest.mark.parametrize("seed", [5, 7])
@pytest.mark.parametrize("cls", PAPER_MECHANISMS, ids=lambda c: c.__qualname__)
def test_the_papers_mechanism_conforms(cls, seed):
    """Operators with a ``mechanism`` run the suite's checks with ``mechanism="paper"`` too:
    its oracle in both engines, push one by one == push_batch for a random split, pickling
    mid-stream, and the kernel == the reference (emissions, state, counters)."""
    batch = _batch(cls, seed)
    runs = {}
    for engine in ENGINES:
        params = {**cls.conformance_params(), "mechanism": "paper", "engine": engine}
        _family(cls).oracle(cls(**params), batch)
        one, many = cls(**params), cls(**params)
        singles = Emitted.concat([one.push(*row) for row in batch.rows()], one.arity)
        bounds = _splits(np.random.default_rng(seed), len(batch))
        parts = [many.push_batch(batch[i:j]) for i, j in itertools.pairwise(bounds[:3])]
        back = pickle.loads(pickle.dumps(many))
        parts += [back.push_batch(batch[i:j]) for i, j in itertools.pairwise(bounds[2:])]
        assert Emitted.concat(parts, many.arity) == singles, engine
        assert back.flush() == one.flush() and back.counters == one.counters
        runs[engine] = (singles, one.counters)
    assert runs["compiled"] == runs["python"]
