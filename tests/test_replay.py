"""Readings as event streams with learned templates, and their micro-batch replay."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from workbench.data.replay import Replayer, learn_templates, readings_to_events
from workbench.data.replica import simulate_deployment
from workbench.data.synthetic import synthetic_events
from workbench.events import sort_pairs
from workbench.operators import PTJoin, StreamSpec, brute_force_join, replay


@pytest.fixture(scope="module")
def readings():
    return simulate_deployment(days=0.5, seed=4)


def test_learned_templates_recover_the_true_jitter(readings):
    """The replica stamps each reading with N(0, 0.3 s) jitter around its mote's schedule."""
    templates = learn_templates(readings)
    assert sorted(templates) == list(range(1, 55))
    rng = np.random.default_rng(0)
    for mote in (1, 20, 54):
        spread = templates[mote].sample(rng, 200_000).std()
        assert spread == pytest.approx(300.0, rel=0.15)  # milliseconds
        assert templates[mote].min == 0.0


def test_readings_become_out_of_order_streams(readings):
    templates = learn_templates(readings)
    west, east = list(range(1, 28)), list(range(28, 55))
    events, sets, rows = readings_to_events(readings, [west, east], templates, [400.0, 600.0])
    assert len(events) == len(readings) and len(sets[0]) == 27 and len(sets[1]) == 27
    delay = events.delays()
    assert np.all(delay >= 0) and delay[events.stream == 0].max() <= 400.0
    assert np.all(np.diff(events.arrival) >= 0) and np.any(np.diff(events.t_det) < 0)
    first = rows[0][0]
    assert readings.loc[first, "mote"] in west
    with pytest.raises(ValueError, match="motes \\[99\\] of stream 1 have no template"):
        readings_to_events(readings, [west, [99]], templates, [1.0, 1.0])


def test_the_learned_streams_join_exactly(readings):
    templates = learn_templates(readings)
    events, sets, _ = readings_to_events(
        readings.head(3000), [[1, 2, 3], [4, 5, 6]], templates, [300.0, 300.0]
    )
    streams = (StreamSpec(sets[0], 300.0), StreamSpec(sets[1], 300.0))
    d = max(s.pi for s in streams) + 15_000.0  # motes sample out of phase: 15 s windows
    matches, _ = replay(PTJoin(streams=streams, d=d, threshold=0.7), events)
    got = sort_pairs(np.stack((matches.a_ids, matches.b_ids), axis=1))
    np.testing.assert_array_equal(got, brute_force_join(events, streams, d, 0.7))
    assert len(got) > 0


def test_replayer_writes_paced_batches(tmp_path, readings):
    templates = learn_templates(readings)
    events, _, _ = readings_to_events(
        readings.head(2000), [[1, 2], [3, 4]], templates, [50.0, 50.0]
    )
    naps = []
    player = Replayer(events, tmp_path / "out", batch_ms=60_000, speed=10.0, sleep=naps.append)
    assert player.run() == len(events)
    files = sorted((tmp_path / "out").glob("batch-*.json"))
    assert len(files) == player.files == len(naps) + 1
    lines = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert len(lines) == len(events) and set(lines[0]) == {
        "stream",
        "id",
        "template",
        "t_det",
        "arrival",
    }
    # pacing: the naps add up to the arrival span before the last file, at 10x speed
    last_start = json.loads(files[-1].read_text().splitlines()[0])["arrival"]
    assert sum(naps) == pytest.approx((last_start - events.arrival[0]) / 1000.0 / 10.0)


def test_replayer_pause_resume_stop(tmp_path, readings):
    templates = learn_templates(readings)
    events, _, _ = readings_to_events(
        readings.head(2000), [[1, 2], [3, 4]], templates, [50.0, 50.0]
    )
    player = Replayer(events, tmp_path / "a", batch_ms=60_000)
    player.pause()
    thread = player.start()
    thread.join(timeout=0.2)
    assert thread.is_alive() and player.written == 0
    player.resume()
    thread.join(timeout=30)
    assert player.written == len(events)

    def stop_after_two(_: float) -> None:
        if stopper.files >= 2:
            stopper.stop()

    stopper = Replayer(events, tmp_path / "b", batch_ms=60_000, speed=1e9, sleep=stop_after_two)
    stopper.run()
    assert stopper.files == 2 and stopper.written < len(events)


def test_a_long_replay_shows_a_progress_bar(tmp_path, capsys):
    events = synthetic_events(np.random.default_rng(4), 50, (2, 2), mean_interarrival=100)
    Replayer(events, tmp_path / "out", batch_ms=1000, progress=True).run()
    captured = capsys.readouterr()
    last = captured.err.rstrip("\n").split("\r")[-1]  # tqdm redraws its line with \r
    assert captured.out == "" and last.startswith("replay: 100%|") and "100/100" in last
    assert "records/s]" in last


def test_stop_ends_a_paced_replay_at_once(tmp_path):
    """The pacing wait is the stop event: a replay hours from its next file stops at once."""
    events = synthetic_events(np.random.default_rng(3), 50, (2, 2), mean_interarrival=1000.0)
    player = Replayer(events, tmp_path / "out", batch_ms=1000, speed=1e-6)
    player.start()
    while player.files == 0:  # the first file goes out without a wait
        time.sleep(0.01)
    begun = time.monotonic()
    player.stop()
    player.join()
    assert time.monotonic() - begun < 5 and player.files == 1
