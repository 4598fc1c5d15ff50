"""The HdrHistogram layout every log here records in, and numbers of a histogram computed
from its counts array at once: hdrh's own walks go over every recorded value in Python, a third of
a second per histogram, which made the reports slow (the figures are those hdrh gives)."""
from __future__ import annotations

import functools

import numpy as np
from hdrh.histogram import HdrHistogram

HIGHEST_US = 3_600_000_000  # an hour, in microseconds
SIGNIFICANT_DIGITS = 3  # core's LatencyHistogram and IntervalLog record with the same


def new_histogram() -> HdrHistogram:
    return HdrHistogram(1, HIGHEST_US, SIGNIFICANT_DIGITS)


@functools.lru_cache(maxsize=8)
def _bucket_values(lowest: int, highest: int, digits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per counts index of histograms with these parameters: the lowest, highest and median
    equivalent value of its bucket, as hdrh computes them (one pass, then cached)."""
    h = HdrHistogram(lowest, highest, digits)
    low, high, mid = (np.zeros(h.counts_len, dtype=np.int64) for _ in range(3))
    for i in range(h.counts_len):
        v = h.get_value_from_index(i)
        low[i], high[i] = h.get_lowest_equivalent_value(v), h.get_highest_equivalent_value(v)
        mid[i] = h._hdr_median_equiv_value(high[i])  # what get_mean_value weighs each count by
    return low, high, mid


def bucket_counts(h: HdrHistogram) -> np.ndarray:
    """The count of each bucket, by counts index."""
    return np.ctypeslib.as_array(h.counts)[:h.counts_len].astype(np.int64)


def _values(h: HdrHistogram) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _bucket_values(h.lowest_trackable_value, h.highest_trackable_value, h.significant_figures)


def _counts(h: HdrHistogram) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return bucket_counts(h), _values(h)


def mean_value(h: HdrHistogram) -> float:
    """h.get_mean_value(), the same number. hdrh's walk stops one index short of the array's
    end, whose count it divides by but never adds; this counts it (no value reaches it
    here: the Java side records at most HIGHEST_US)."""
    n = h.get_total_count()
    if not n:
        return 0.0
    counts, (_, _, mid) = _counts(h)
    if n * int(mid[-1]) < 2**63:
        return float(int(np.dot(counts, mid))) / n
    return float(sum(int(c) * int(m) for c, m in zip(counts, mid) if c)) / n  # int64 would wrap


def percentile_index(h: HdrHistogram, percentile: float) -> int:
    """The counts index of the bucket that holds h's value at ``percentile``."""
    return int(np.searchsorted(np.cumsum(bucket_counts(h)), h.get_target_count_at_percentile(percentile)))


def value_at_percentile(h: HdrHistogram, percentile: float) -> int:
    """h.get_value_at_percentile(percentile), the same number, by a cumulative sum."""
    i = percentile_index(h, percentile)  # copies the counts once
    if i >= h.counts_len:
        return 0
    low, high, _ = _values(h)
    return int(high[i] if percentile else low[i])


def recorded(h: HdrHistogram) -> tuple[np.ndarray, np.ndarray]:
    """What h.get_recorded_iterator() walks to: each non-empty bucket's highest equivalent
    value (``value_iterated_to``) and its count, in ascending order. hdrh's walk never reaches
    the array's last index; this does, so the counts add up to the total (no value reaches it
    here, as in mean_value)."""
    counts, (_, high, _) = _counts(h)
    index = np.flatnonzero(counts)
    return high[index], counts[index]
