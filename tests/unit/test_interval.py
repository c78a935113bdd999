"""The interval assignment rule: over a whole partition, every record lands in exactly one
interval; with disorder within the allowed lateness, in the interval of its own timestamp."""
import random

import pytest

from streamslice.planning.bounds import IntervalBounds, classify
from streamslice.planning.plan import Interval


def boundary_times(iv):
    b = IntervalBounds(iv)
    return {"start": b.start, "stop": b.read_until, **b.ownership()}

W = 1000


def offsets_for_time(timestamps, t):
    """Kafka's rule: the first offset whose timestamp is >= t, else the end."""
    return next((o for o, ts in enumerate(timestamps) if ts >= t), len(timestamps))


def assign(timestamps, n_intervals, lateness):
    owner = {}
    for i in range(n_intervals):
        iv = Interval(i * W, (i + 1) * W, lateness)
        at = {k: offsets_for_time(timestamps, v) for k, v in boundary_times(iv).items()}
        offs = list(range(at["start"], at["stop"]))
        on_time, late = classify([timestamps[o] for o in offs], offs, iv,
                                 at["late_from"], at["owned_until"])
        for o, a, b in zip(offs, on_time.to_pylist(), late.to_pylist()):
            assert not (a and b)
            if a or b:
                assert o not in owner, f"offset {o} assigned twice"
                owner[o] = (i, b)
    return owner


def stream(seed, n, max_delay, late_share=0.2, far_late=0):
    rng = random.Random(seed)
    ts = sorted(rng.randrange(0, 6 * W - 1) for _ in range(n))
    arrival = [t + (rng.randrange(max_delay) if rng.random() < late_share else 0) for t in ts]
    for i in rng.sample(range(n), far_late):  # some records far beyond any lateness
        arrival[i] = ts[i] + rng.randrange(2 * W, 3 * W)
    order = sorted(range(n), key=lambda i: (arrival[i], i))
    return [ts[i] for i in order]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("lateness", [0, 150, 400, W])
def test_every_record_exactly_once(seed, lateness):
    timestamps = stream(seed, 400, max_delay=600, far_late=5)
    owner = assign(timestamps, 9, lateness)  # intervals cover the stream and its tail
    assert sorted(owner) == list(range(len(timestamps)))


@pytest.mark.parametrize("seed", range(20))
def test_disorder_within_lateness_lands_on_time(seed):
    timestamps = stream(seed, 400, max_delay=300)
    owner = assign(timestamps, 7, lateness=300)
    for offset, (interval, late) in owner.items():
        assert not late and interval == timestamps[offset] // W


def test_beyond_lateness_is_kept_and_flagged():
    # offset 3 has timestamp 100 but arrives when the stream is at 1500: late for [0, 1000)
    timestamps = [50, 600, 1200, 100, 1500, 1600]
    owner = assign(timestamps, 3, lateness=200)
    assert owner[3] == (1, True)
    assert {o: i for o, (i, late) in owner.items() if not late} == {0: 0, 1: 0, 2: 1, 4: 1, 5: 1}
