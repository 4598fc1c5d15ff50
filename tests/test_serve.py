"""The results browser (`k2bench serve`, analysis/serve.py, site.py, catalog.py) on real
small runs (tests/fixtures/run-*) and a reproduction directory (tests/fixtures/repro-k2:
a scorecard.json and one run), copied into a temporary runs directory beside a run made
interrupted with a violation, a `latest` link and hidden directories. The last tests open
every page in headless Chromium (`make browser-deps` installs it; missing, they fail)."""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from analysis import browser, catalog, load, serve, site
from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
OUTPUT = ROOT / "tests" / ".output"
RUNS = ("run-analysis", "run-karma", "run-paris", "run-sweep")
BROKEN = "20261203T100000Z_broken"  # interrupted, one trial missing, violations, degraded


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    for name in (*RUNS, "repro-k2"):
        shutil.copytree(FIXTURES / name, d / name)
    (d / "latest").symlink_to("run-karma")
    (d / ".deploy" / "x").mkdir(parents=True)
    (d / "compare-20261203T000000Z").mkdir()  # `k2bench compare`'s output: no run
    report = d / "run-analysis" / "report"
    report.mkdir()
    shutil.copy(ROOT / "docs" / "freshness.png", report / "fig.png")
    (report / "index.html").write_text("<!doctype html><title>report</title><img src='fig.png' alt='a figure'>")
    broken = d / BROKEN
    shutil.copytree(FIXTURES / "repro-k2" / "default", broken)
    m = json.loads((broken / "manifest.json").read_text())
    m |= {"status": "interrupted", "reason": "interrupted by the user (Ctrl-C or SIGTERM)",
          "trials": m["trials"] + [dict(m["trials"][0], system="rad", dir="rad")]}
    del m["started"]  # the date then comes from the directory's name
    (broken / "manifest.json").write_text(json.dumps(m))
    s = json.loads((broken / "k2" / "summary.json").read_text())
    s["warnings"] = ["emulation degraded: wan p99 lateness 7.1 ms"]
    s["emulation_lateness_ms"]["degraded"] = True
    (broken / "k2" / "summary.json").write_text(json.dumps(s))
    c = json.loads((broken / "k2" / "consistency.json").read_text())
    c["violations"] = {"count": 3, "by_kind": {"causality": 3},
                       "listed": [{"kind": "causality", "message": f"read {i} missed a dependency"} for i in range(3)]}
    (broken / "k2" / "consistency.json").write_text(json.dumps(c))
    return d


@pytest.fixture(scope="module")
def built(runs_dir):
    return site.build(runs_dir, "runs")


def by_id(cat):
    return {r["id"]: r for r in cat["runs"]}


def test_every_run_is_listed_once_and_a_reproductions_runs_under_it(runs_dir, built):
    _, cat = built
    runs = by_id(cat)
    assert set(runs) == {*RUNS, "repro-k2/default", BROKEN}  # no latest, .deploy, .site, compare-*
    assert runs["repro-k2/default"]["parent"] == "repro-k2"
    assert [r["id"] for r in cat["runs"]][0] == BROKEN  # newest first (its date from its name)
    assert runs[BROKEN]["date"] == "2026-12-03 10:00 UTC"
    assert [c["id"] for c in cat["scorecards"]] == ["repro-k2"]


def test_status_trials_flags_of_a_run(built):
    runs = by_id(built[1])
    ok, bad = runs["run-analysis"], runs[BROKEN]
    assert (ok["status_text"], ok["trials_present"], ok["trials_expected"]) == ("finished", 3, 3)
    assert ok["violations_total"] == 0 and not ok["degraded"] and not ok["warnings"]
    assert ok["report"] == "runs/run-analysis/report/index.html" and runs["run-karma"]["report"] is None
    assert (bad["status_text"], bad["trials_present"], bad["trials_expected"]) == ("interrupted", 1, 2)
    assert bad["violations_total"] == 3 and bad["degraded"]
    assert [w["text"] for w in bad["warnings"]] == ["emulation degraded: wan p99 lateness 7.1 ms"]
    assert runs["run-sweep"]["violations_total"] is None  # not checked


def test_one_trial_shows_its_summary_and_its_logs_merged_give_the_same(built):
    k2 = by_id(built[1])["run-analysis"]["headline"]["k2"]
    s = json.loads((FIXTURES / "run-analysis" / "k2" / "summary.json").read_text())
    rot = s["ops"]["rot"]
    assert (k2["mean_ms"], k2["p50_ms"], k2["p99_ms"]) == tuple(rot["latency_ms"][k] for k in ("mean", "p50", "p99"))
    assert k2["all_local"] == rot["all_local_fraction"] and k2["throughput"] == s["throughput_ops_per_s"]
    entry = json.loads((FIXTURES / "run-analysis" / "manifest.json").read_text())["trials"][0]
    merged = catalog._merged_figures([(FIXTURES / "run-analysis" / "k2", entry, s)], "rot")
    assert merged["count"] == rot["count"] and merged["p99_ms"] == rot["latency_ms"]["p99"]
    assert merged["all_local"] == pytest.approx(rot["all_local_fraction"], abs=1e-6)


def test_trials_are_pooled_by_merging_logs_never_by_averaging_percentiles(built):
    karma = by_id(built[1])["run-karma"]["headline"]["karma"]
    trials = [json.loads((FIXTURES / "run-karma" / "karma" / f"trial-{k}" / "summary.json").read_text())
              for k in (1, 2)]
    rot = [t["ops"]["rot"] for t in trials]
    assert karma["pooled"] == "2 trials' logs merged" and karma["trials"] == 2
    assert karma["count"] == sum(r["count"] for r in rot)
    weighted = sum(r["count"] * r["latency_ms"]["mean"] for r in rot) / karma["count"]
    assert karma["mean_ms"] == pytest.approx(weighted, abs=0.01)
    p50s = [r["latency_ms"]["p50"] for r in rot]
    assert min(p50s) <= karma["p50_ms"] <= max(p50s) and karma["p50_ms"] != sum(p50s) / 2
    assert (karma["throughput_min"], karma["throughput_max"]) == (143.875, 144.25)
    # a system's headline is its first point; PaRiS runs only read-write transactions
    paris = by_id(built[1])["run-paris"]["headline"]["paris"]
    assert (paris["op"], paris["point"], paris["points"]) == ("rwt", "threads_per_dc=1_rw_writes=1", 4)


def test_the_pages(runs_dir, built):
    out, cat = built
    index = (out / "index.html").read_text()
    for r in cat["runs"]:
        assert f'href="run-{r["slug"]}.html"' in index and (out / f"run-{r['slug']}.html").is_file()
    assert "K2 (Ngo, Lu, Lloyd, DSN 2021)" in index and "36.4" in index and "3 violations" in index
    assert "degraded emulation" in index and "interrupted" in index
    karma = (out / "run-run-karma.html").read_text()
    assert "make analyze RUN=runs/run-karma" in karma and "karma/trial-2/summary.json" in karma
    assert 'href="runs/run-analysis/report/index.html"' in (out / "run-run-analysis.html").read_text()
    assert "read 0 missed a dependency" in (out / f"run-{BROKEN}.html").read_text()
    card = (out / "scorecard-repro-k2.html").read_text()
    assert 'class="verdict not-covered"' in card and 'class="verdict within-noise"' in card
    assert 'href="docs/systems/k2.md#does-the-paper-hold-here"' in card
    assert 'href="run-repro-k2--default.html"' in card and "tao <span" in card  # tao: no run to link
    data = json.loads((out / "runs.json").read_text())
    assert {r["id"] for r in data["runs"]} == {r["id"] for r in cat["runs"]}
    assert [m["key"] for m in data["metrics"]] == [k for k, *_ in site.HEADLINE]


def test_a_rebuild_drops_pages_of_runs_gone_and_reuses_pooled_figures(runs_dir, tmp_path, monkeypatch):
    d = tmp_path / "runs"
    shutil.copytree(runs_dir / "run-karma", d / "run-karma")
    shutil.copytree(runs_dir / "run-analysis", d / "run-analysis")
    out, _ = site.build(d)
    shutil.rmtree(d / "run-analysis")

    def no_logs(*a, **kw):
        raise AssertionError("the pooled figures were in the cache")

    monkeypatch.setattr(load, "_read_compact", no_logs)
    _, cat = site.build(d)
    assert [r["id"] for r in cat["runs"]] == ["run-karma"]
    assert sorted(p.name for p in out.glob("run-*.html")) == ["run-run-karma.html"]


def test_an_empty_runs_directory_and_a_missing_one(tmp_path, capsys):
    assert serve.main([str(tmp_path), "--build-only"]) == 0
    assert "No runs in" in (tmp_path / ".site" / "index.html").read_text()
    capsys.readouterr()
    assert serve.main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope: no such runs directory" in err


def test_ctrl_c_stops_the_server_cleanly(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "analysis.serve", str(tmp_path), "--port", "0"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline().startswith("serve: wrote")
        url = re.search(r"http://127\.0\.0\.1:\d+/", p.stdout.readline()).group(0)
        assert fetch(url + "index.html")[0] == 200
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert (p.returncode, out) == (0, "serve: stopped\n")


def test_heading_anchors_are_githubs():
    assert serve.heading_id("Does the paper hold here?") == "does-the-paper-hold-here"
    assert serve.heading_id("K2, RAD and PaRiS*") == "k2-rad-and-paris"
    assert serve.heading_id("`make analyze` reports") == "make-analyze-reports"


@pytest.fixture(scope="module")
def server(runs_dir, built):
    srv = serve.Server(runs_dir, built[0], port=0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def test_the_server_maps_runs_and_docs_and_nothing_else(server, runs_dir):
    assert fetch(server.url + "runs/run-karma/manifest.json")[0] == 200
    assert fetch(server.url + "runs/latest/manifest.json")[0] == 200  # a link inside RUNS_DIR
    status, body = fetch(server.url + "docs/systems/k2.md")
    assert status == 200 and b'id="does-the-paper-hold-here"' in body
    (runs_dir / "escape").symlink_to(ROOT)
    try:
        for path in ("runs/escape/README.md", "runs/%2e%2e/README.md", "runs/../README.md", "docs/../README.md"):
            assert fetch(server.url + path)[0] == 404, path
    finally:
        (runs_dir / "escape").unlink()


def local_links(drv, base: str) -> list[str]:
    urls = drv.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href)"
                              ".concat([...document.querySelectorAll('img[src]')].map(i => i.src))")
    return [u for u in urls if u.startswith(base)]


def test_every_page_in_headless_chromium(server, built, capsys):
    """Every page opens without a console error, each link and image on it answers, figures
    draw, and the compare page shows both runs' figures; the index's screenshot is kept."""
    out, cat = built
    tmp = Path(tempfile.gettempdir())
    leftovers = set(tmp.glob("org.chromium.Chromium.*")) | set(tmp.glob("k2bench-chromium-*"))
    try:
        drv = browser.chromium()
    except browser.BrowserMissing as e:
        pytest.fail(str(e))
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    base = server.url
    pages = ["index.html", "compare.html", "compare.html?a=run-analysis&b=run-sweep",
             *(f"run-{r['slug']}.html" for r in cat["runs"]),
             *(f"scorecard-{c['slug']}.html" for c in cat["scorecards"]),
             "runs/run-analysis/report/index.html", "docs/systems/k2.md"]
    checked: dict[str, int] = {}
    try:
        for page in pages:
            drv.get(base + page)
            if page.startswith("compare.html?"):
                WebDriverWait(drv, 10).until(lambda d: d.find_elements(By.ID, "compare-table"))
                table = drv.find_element(By.ID, "compare-table").text
                assert "36.4" in table and "34.6" in table  # k2's ROT mean in run-analysis and run-sweep
                assert "better" in table and "run-sweep" in drv.find_element(By.ID, "compare-runs").text
            severe = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
            assert not severe, f"{page}: {severe}"
            for img in drv.find_elements(By.TAG_NAME, "img"):
                assert drv.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 0, page
            if page.startswith("docs/"):
                continue  # the docs' own links reach into the repository, which is not served
            for url in local_links(drv, base):
                target, _, anchor = url.partition("#")
                if target not in checked:
                    checked[target] = fetch(target)[0]
                assert checked[target] == 200, f"{page} links to {url}: HTTP {checked[target]}"
                if anchor and target.startswith(base + "docs/"):
                    assert f'id="{anchor}"'.encode() in fetch(target)[1], f"{page}: {url}: no such anchor"
        assert base + "runs/run-analysis/report/index.html" in checked
        png = browser.screenshot(drv, base + "index.html", OUTPUT / "serve-index.png")
    finally:
        drv.quit()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(tmp.glob("org.chromium.Chromium.*")) | set(tmp.glob("k2bench-chromium-*")) == leftovers, \
        "Chromium's temporary directory is left behind"
    with capsys.disabled():
        print(f"\nserve: the index as Chromium draws it: {png}")


def test_screenshot_flag_saves_the_index_and_every_scorecard(runs_dir, tmp_path):
    assert serve.main([str(runs_dir), "--screenshot", str(tmp_path / "shots")]) == 0
    shots = sorted(p.name for p in (tmp_path / "shots").iterdir())
    assert shots == ["index.png", "scorecard-k2.png"]
    width, height = struct.unpack(">II", (tmp_path / "shots" / "index.png").read_bytes()[16:24])
    assert width == browser.WIDTH and height > 500


def test_serve_is_a_k2bench_command_by_entry_point():
    import tomllib

    commands = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["k2bench.commands"]
    module, _, name = commands["serve"].partition(":")
    assert (module, name) == ("analysis.serve", "main") and getattr(serve, name) is serve.main
