"""The simulated replica of the Intel Lab deployment."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from workbench.data.intel_lab import FLAG_BATTERY, load_readings
from workbench.data.replica import (
    EPOCH_SECONDS,
    SOURCE_LABEL,
    delivery_probabilities,
    simulate_deployment,
)


def write_readings(table, path):
    """Write readings in the real file's format (8 fields, no header)."""
    with open(path, "w", encoding="utf-8") as out:
        for row in table.itertuples(index=False):
            stamp = row.time.strftime("%Y-%m-%d %H:%M:%S.%f")
            out.write(
                f"{stamp} {row.epoch} {row.mote} {row.temperature:g} {row.humidity:g} "
                f"{row.light:g} {row.voltage:g}\n"
            )


@pytest.fixture(scope="module")
def replica():
    return simulate_deployment(days=2.0, seed=3, failing_fraction=0.15)


def test_seeded_and_labelled(replica):
    again = simulate_deployment(days=2.0, seed=3, failing_fraction=0.15)
    assert replica.equals(again) and replica.attrs["source"] == SOURCE_LABEL
    assert not replica.equals(simulate_deployment(days=2.0, seed=4, failing_fraction=0.15))


@pytest.mark.parametrize(
    ("days", "seed", "failing_fraction", "rows", "digest"),
    [
        (0.5, 0, 0.1, 40273, "86b8014f933d5029d1512544f86780c40c85b01331f82d8786658cf03a1a0297"),
        (0.3, 3, 0.5, 22798, "1db520d9835bb1e299192aa8d981f6cd0935b6e7dcaaa97f92a54835be4db189"),
    ],
)
def test_same_table_as_before_the_constants_were_named(days, seed, failing_fraction, rows, digest):
    """Checksums computed on the simulation before its split into named pieces (issue 50)."""
    table = simulate_deployment(days=days, seed=seed, failing_fraction=failing_fraction)
    hashed = pd.util.hash_pandas_object(table, index=True).to_numpy().tobytes()
    assert (len(table), hashlib.sha256(hashed).hexdigest()) == (rows, digest)


def test_every_real_mote_samples_every_31_seconds_with_losses(replica):
    assert sorted(replica["mote"].unique()) == list(range(1, 55))
    mote = replica[replica["mote"] == 20]
    steps = np.diff(mote["time"].to_numpy()).astype("timedelta64[ms]").astype(float) / 1000
    per_epoch = steps / np.diff(mote["epoch"].to_numpy())
    assert np.median(per_epoch) == pytest.approx(EPOCH_SECONDS, abs=1.0)
    possible = 54 * 2 * 86400 / EPOCH_SECONDS
    share = len(replica) / possible
    assert 0.3 < share < 0.8  # link losses (the real file kept about 43 %)
    assert (np.diff(mote["epoch"].to_numpy()) > 1).any()  # epoch gaps


def test_delivery_follows_the_real_link_qualities():
    deliver, hops = delivery_probabilities()
    assert deliver.shape == (54,) and hops.min() >= 1
    assert np.all((deliver > 0) & (deliver <= 1))


def test_diurnal_and_correlated_measures(replica):
    healthy = replica[replica["qc"] == 0]
    hour = healthy["time"].dt.hour
    afternoon = healthy[(hour >= 14) & (hour <= 16)]["temperature"].mean()
    night = healthy[(hour >= 2) & (hour <= 4)]["temperature"].mean()
    assert afternoon > night + 2
    assert np.corrcoef(healthy["temperature"], healthy["humidity"])[0, 1] < -0.5
    assert (
        healthy["light"][(hour >= 10) & (hour <= 16)].mean()
        > 5 * healthy["light"][hour <= 4].mean()
    )
    assert 15 < healthy["temperature"].mean() < 30 and 0 <= healthy["humidity"].min()


def test_dying_batteries_show_the_real_failure_signature(replica):
    dying = replica[(replica["qc"] & FLAG_BATTERY).astype(bool)]
    assert len(dying) > 0
    assert dying["temperature"].max() > 100 and dying["humidity"].min() < 0
    silent = replica.groupby("mote")["time"].max()
    assert (silent < replica["time"].max() - np.timedelta64(6, "h")).any()  # some motes stop


def test_round_trip_through_the_real_file_format(tmp_path):
    table = simulate_deployment(days=0.1, seed=5)
    path = tmp_path / "data.txt"
    write_readings(
        table.sample(frac=1.0, random_state=1), str(path)
    )  # unsorted, like the real file
    loaded, report = load_readings(path)
    assert report.rows == len(table) and not report.malformed
    np.testing.assert_allclose(loaded["temperature"], table["temperature"], rtol=1e-5)
    assert (loaded["mote"].to_numpy() == table["mote"].to_numpy()).all()


def test_arrival_after_sampling(replica):
    delay = (replica["arrival"] - replica["time"]).dt.total_seconds()
    assert (delay > 0).all() and delay.max() < 5
