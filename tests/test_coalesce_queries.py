"""The coalescing paper's Examples 1 and 2 as queries over readings tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench.coalesce.queries import longest_warm_period, similar_humidity
from workbench.data.replica import simulate_deployment


def _readings(rows):
    t0 = pd.Timestamp("2004-03-01")
    return pd.DataFrame(
        {
            "time": [t0 + pd.to_timedelta(s, unit="s") for s, _, _, _ in rows],
            "mote": [m for _, m, _, _ in rows],
            "humidity": [h for _, _, h, _ in rows],
            "temperature": [t for _, _, _, t in rows],
        }
    )


def test_example_1_pairs_with_a_long_enough_intersection():
    rows = []
    for s in range(0, 1200, 30):  # mote 1: 40.x % all along; mote 2: 40.x % from 300 s on
        rows.append((s, 1, 40.2, 20.0))
        rows.append((s + 5, 2, 40.7 if s >= 300 else 35.0, 20.0))
        rows.append((s + 9, 3, 40.5 if 300 <= s < 420 else 30.0, 20.0))  # only 2 minutes
    table = _readings(rows)
    out = similar_humidity(table, window_s=3600, slide_s=600, quantum=1.0, min_overlap_s=240)
    last = out[out["at"] == out["at"].max()]
    assert set(zip(last["mote_a"], last["mote_b"], strict=True)) == {(1, 2)}
    pair = last.iloc[0]
    t0 = pd.Timestamp("2004-03-01").value / 1e9
    assert pair["start"] - t0 == pytest.approx(305.0) and pair["humidity"] == 40.0
    lazy = similar_humidity(table, window_s=3600, slide_s=600, scheme="lazy")
    pd.testing.assert_frame_equal(out, lazy)


def test_example_2_longest_warm_period():
    rows = [(s, 7, 40.0, 26.0 if 600 <= s < 1800 else 20.0) for s in range(0, 3600, 60)]
    rows += [(s + 1, 8, 40.0, 20.0) for s in range(0, 3600, 60)]
    out = longest_warm_period(_readings(rows), threshold=24.0, window_s=7200, slide_s=3600)
    final = out[out["at"] == out["at"].max()].set_index("mote")["seconds"]
    assert final[7] == pytest.approx(1200.0) and final[8] == 0.0


def test_eager_and_lazy_answer_alike_on_the_replica():
    table = simulate_deployment(days=0.15, seed=2)
    for query, kwargs in (
        (similar_humidity, {"slide_s": 900}),
        (longest_warm_period, {"window_s": 3 * 3600, "slide_s": 1800}),
    ):
        eager = query(table, scheme="eager", **kwargs)
        lazy = query(table, scheme="lazy", **kwargs)
        pd.testing.assert_frame_equal(eager, lazy)
    assert len(similar_humidity(table, slide_s=900)) > 0
    with pytest.raises(ValueError, match="scheme = 'fast'"):
        longest_warm_period(table, scheme="fast")
    assert np.isfinite(longest_warm_period(table, slide_s=3600)["seconds"]).all()
