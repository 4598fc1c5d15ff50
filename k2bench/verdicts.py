"""How two measured values are told apart: the verdict every report gives ("a lower", "a
higher", "within noise"), for the harness's own reports and for analysis/ alike."""
from __future__ import annotations

from collections.abc import Mapping

from .histograms import SIGNIFICANT_DIGITS

# The recorders keep SIGNIFICANT_DIGITS significant digits: values a thousandth apart may
# share a bucket, so ranges closer than that do not differ (a constant 146.7 ms round trip
# read 146.687 in one trial set and 146.815 in another).
HISTOGRAM_PRECISION = 10.0 ** -SIGNIFICANT_DIGITS


def _missing(v) -> bool:
    return v is None or v != v  # NaN is not equal to itself


def versus(a: Mapping, b: Mapping, metric: str) -> dict:
    """``metric`` of a against b (each a mapping with ``metric``, ``<metric>_min``,
    ``<metric>_max`` over trials and ``trials``): the ratio a / b of their pooled values, its
    range from the trials' spreads (a's min over b's max to a's max over b's min), and whether
    they differ beyond it: "a lower", "a higher", or "within noise" where their ranges over
    trials overlap or lie within the histograms' precision of each other ("one trial"
    without a spread)."""
    x, y = a.get(metric), b.get(metric)
    lo_a, hi_a, lo_b, hi_b = (a.get(f"{metric}_min"), a.get(f"{metric}_max"), b.get(f"{metric}_min"),
                              b.get(f"{metric}_max"))
    if any(_missing(v) for v in (x, y, lo_a, hi_a, lo_b, hi_b)) or not y:
        return {"ratio": None, "ratio_min": None, "ratio_max": None, "verdict": "not measured"}
    out = {"ratio": x / y, "ratio_min": lo_a / hi_b if hi_b else None, "ratio_max": hi_a / lo_b if lo_b else None}
    if min(a.get("trials", 1), b.get("trials", 1)) < 2:
        return out | {"verdict": "one trial: no spread"}
    if hi_a < lo_b * (1 - HISTOGRAM_PRECISION):
        return out | {"verdict": "a lower"}
    if lo_a > hi_b * (1 + HISTOGRAM_PRECISION):
        return out | {"verdict": "a higher"}
    return out | {"verdict": "within noise"}
