"""A report decodes each log once (analysis.load's cache, set by analysis.report for its
notebooks): what comes back from the cache is what decoding gives, a changed log is decoded
again, and the report leaves no cache behind."""
import os
import shutil

import numpy as np
import pytest

from analysis import load, report
from conftest import ROOT

LOG = ROOT / "tests" / "fixtures" / "run-analysis" / "k2" / "clients" / "client-LDN.hlog"


def same(a, b):
    assert [(i.tag, i.start_ms, i.end_ms) for i in a] == [(i.tag, i.start_ms, i.end_ms) for i in b]
    for x, y in zip(a, b):
        assert np.array_equal(x.histogram.index, y.histogram.index)
        assert np.array_equal(x.histogram.count, y.histogram.count)


def test_a_cached_log_reads_as_decoded_and_a_changed_one_is_decoded_again(tmp_path, monkeypatch):
    log = tmp_path / "client.hlog"
    shutil.copy2(LOG, log)
    decoded = load._decode_compact(log, False)
    assert len(decoded) > 50 and all(i.tag for i in decoded)
    monkeypatch.setenv(load.CACHE_ENV, str(tmp_path / "cache"))
    same(load._read_compact(log), decoded)
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1

    calls = []
    real = load._decode_compact
    monkeypatch.setattr(load, "_decode_compact", lambda *a: calls.append(a) or real(*a))
    same(load._read_compact(log), decoded)
    assert calls == [], "read from the cache"
    window = (decoded[10].start_ms, decoded[-10].end_ms)
    tag = decoded[0].tag
    assert load.merge(load._read_compact(log), tag, window).get_value_at_percentile(99) == \
        load.merge(decoded, tag, window).get_value_at_percentile(99)

    os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns + 1_000_000_000))
    load._read_compact(log)
    assert len(calls) == 1, "a log changed since is decoded again"
    load._read_compact(log, tolerant=True)
    assert len(calls) == 2, "read tolerantly, a torn log may give fewer intervals: kept apart"


def test_an_untagged_interval_stays_untagged(tmp_path, monkeypatch):
    ivs = load._decode_compact(LOG, False)[:3]
    ivs = [load.Interval(None, i.start_ms, i.end_ms, i.histogram) for i in ivs]
    monkeypatch.setattr(load, "_decode_compact", lambda *a: ivs)
    monkeypatch.setenv(load.CACHE_ENV, str(tmp_path))
    load._read_compact(LOG)
    monkeypatch.setattr(load, "_decode_compact", lambda *a: pytest.fail("decoded again"))
    assert [i.tag for i in load._read_compact(LOG)] == [None, None, None]


def test_the_report_sets_the_cache_for_its_notebooks_and_removes_it(tmp_path, monkeypatch):
    monkeypatch.delenv(load.CACHE_ENV, raising=False)
    with report.decoded_once(tmp_path):
        cache = os.environ[load.CACHE_ENV]
        assert cache.startswith(str(tmp_path))
        load._read_compact(LOG)
        assert list(os.scandir(cache))
    assert load.CACHE_ENV not in os.environ and not os.path.exists(cache)
    monkeypatch.setenv(load.CACHE_ENV, str(tmp_path / "mine"))
    with report.decoded_once(tmp_path):
        assert os.environ[load.CACHE_ENV] == str(tmp_path / "mine"), "a user's own setting is kept"
        load._read_compact(LOG)
    assert os.environ[load.CACHE_ENV] == str(tmp_path / "mine") and list((tmp_path / "mine").iterdir())
