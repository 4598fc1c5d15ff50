"""k2bench.histograms reads a histogram's counts array at once; what it gives must equal
what hdrh's own per-value Python walks give, on histograms of very different shapes."""
import random

from hdrh.histogram import HdrHistogram

from analysis import frames
from k2bench import histograms as H


def _shapes(n: int = 25):
    rng = random.Random(7)
    for _ in range(n):
        h = H.new_histogram()
        for _ in range(rng.randint(1, 2000)):
            v = int(rng.lognormvariate(rng.uniform(0, 15), rng.uniform(0.1, 3))) % H.HIGHEST_US
            h.record_value(max(v, 1), rng.randint(1, 5))
        yield h


def test_mean_and_percentiles_are_hdrhs_own_numbers():
    for h in _shapes():
        assert H.mean_value(h) == h.get_mean_value()
        for p in (0, 1, 50, 90, 99, 99.9, 100):
            assert H.value_at_percentile(h, p) == h.get_value_at_percentile(p), p
    assert H.mean_value(H.new_histogram()) == 0.0 and H.value_at_percentile(H.new_histogram(), 50) == 0


def test_recorded_values_and_the_cdf_are_those_of_hdrhs_recorded_iterator():
    for h in list(_shapes(10)) + [_two_digits()]:
        walk = [(i.value_iterated_to, i.count_at_value_iterated_to) for i in h.get_recorded_iterator()]
        values, counts = H.recorded(h)
        assert list(zip(values.tolist(), counts.tolist())) == walk
        cdf = frames.cdf(h)
        seen = 0
        for (value, count), got_value, got_fraction in zip(walk, cdf["value"], cdf["fraction"]):
            seen += count
            assert (got_value, got_fraction) == (value / 1000.0, seen / h.get_total_count())
        assert len(cdf) == len(walk) and cdf["fraction"].iloc[-1] == 1.0
    assert frames.cdf(H.new_histogram()).empty


def _two_digits() -> HdrHistogram:
    """Another layout: its own bucket values, not new_histogram's."""
    h = HdrHistogram(1, H.HIGHEST_US, 2)
    for v in (5, 1234, 98_765, 1_234_567):
        h.record_value(v, 3)
    return h
