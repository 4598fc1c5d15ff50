"""Latency-aware replica placement (k2bench/placement/, `k2bench demand`, `k2bench place`):
the MILP against brute force, its constraints, the table file, the demand of a run and of the
workload model, and the command line."""
import itertools
import json
import math
import os

import numpy as np
import pandas as pd
import pytest
import yaml

from k2bench import placement as P
from k2bench.cli import main
from k2bench.errors import ConfigError

from conftest import ROOT

PAPER = ROOT / "workloads" / "topologies" / "paper-local.yaml"

# Four datacenters, uneven RTTs: A and B central, D far from everything.
SMALL = {"datacenters": ["A", "B", "C", "D"], "replication_factor": 2,
         "rtt_ms": {"A": {"B": 10, "C": 50, "D": 90}, "B": {"C": 40, "D": 70}, "C": {"D": 30}}}
# Six keys, all read mostly from A and B: each key alone would take {A, B}; with balance 1
# (at most 2 x 6 / 4 = 3 keys per datacenter) at most three can.
SMALL_READS = np.array([[60, 30, 5, 5], [50, 40, 10, 0], [70, 10, 10, 10],
                        [40, 40, 0, 20], [30, 60, 10, 0], [45, 35, 15, 5]], dtype=float)


def long_demand(reads: np.ndarray, dcs, writes=None):
    n, d = reads.shape
    writes = np.zeros_like(reads) if writes is None else writes
    rows = [(k, dcs[i], reads[k, i], writes[k, i]) for k in range(n) for i in range(d) if reads[k, i] + writes[k, i] > 0]
    return pd.DataFrame(rows, columns=["key_id", "dc", "reads", "writes"]).astype({"key_id": "int64"})


def failure_latency(members, rtt: np.ndarray, x: int) -> np.ndarray:
    """Each datacenter's read latency of a key on ``members`` while x's storage is down (the
    replica-placement paper, §VIII-E): the nearest surviving replica; x's own clients send
    their requests to the datacenter closest to x and read from there."""
    d = rtt.shape[0]
    lat = np.array([min(rtt[i, j] for j in members if j != x) for i in range(d)], dtype=float)
    closest = min((j for j in range(d) if j != x), key=lambda j: (rtt[x, j], j))
    lat[x] = rtt[x, closest] + lat[closest]
    return lat


def brute_force(reads: np.ndarray, rtt: np.ndarray, f: int, cap: int, model: str):
    """The optimum over every assignment of an f-subset to every key, within the storage bound."""
    n, d = reads.shape
    w = reads / reads.sum()
    subsets = list(itertools.combinations(range(d), f))
    cost = np.zeros((n, len(subsets)))
    for s, members in enumerate(subsets):
        normal = np.array([min(rtt[i, j] for j in members) for i in range(d)])
        for k in range(n):
            c = float(w[k] @ normal)
            if model == "n-1c":
                fails = [float(w[k] @ failure_latency(members, rtt, x)) for x in range(d)]
                c = max(fails) + 0.01 * c
            cost[k, s] = c
    member = np.array([[j in m for j in range(d)] for m in subsets], dtype=int)
    choices = np.array(list(itertools.product(range(len(subsets)), repeat=n)))  # every assignment
    feasible = (member[choices].sum(axis=1) <= cap).all(axis=1)
    totals = np.where(feasible, cost[np.arange(n), choices].sum(axis=1), np.inf)
    best = int(np.argmin(totals))
    return float(totals[best]), [subsets[s] for s in choices[best]], cost, subsets


@pytest.mark.parametrize("model", ["ba", "n-1c"])
@pytest.mark.parametrize("formulation", ["sets", "xyz"])
def test_the_milp_finds_the_brute_force_optimum_when_the_balance_bound_binds(model, formulation):
    topo = P.load_topology(SMALL)
    cap = 3  # ceil(balance 1 x f 2 x 6 keys / 4 datacenters)
    best, _, cost, subsets = brute_force(SMALL_READS, topo.rtt, 2, cap, model)
    greedy = [subsets[int(np.argmin(cost[k]))] for k in range(6)]
    assert max(sum(j in s for s in greedy) for j in range(4)) > cap  # each key's own best is infeasible
    assert best > cost.min(axis=1).sum() + 1e-9  # so the bound costs something
    placed = P.place(long_demand(SMALL_READS, SMALL["datacenters"]), SMALL, model, balance=1.0,
                     mip_rel_gap=0, formulation=formulation, progress=None)
    assert placed.info["buckets"] == 6  # every key is hot: a bucket each
    assert placed.info["objective"] == pytest.approx(best, rel=1e-7, abs=1e-9)
    # the placement itself, costed independently, is optimal and within the bound
    chosen = [tuple(sorted(SMALL["datacenters"].index(x) for x in placed.sets[placed.set_per_id[k]])) for k in range(6)]
    assert sum(cost[k, subsets.index(chosen[k])] for k in range(6)) == pytest.approx(best, rel=1e-7)
    assert max(placed.info["keys_per_dc"].values()) <= cap


def lower_quantile(lat: np.ndarray, weight: np.ndarray, q: float) -> float:
    """The weighted lower quantile, independently of the optimiser: the least latency whose
    reads, with all faster ones, weigh at least q."""
    order = np.argsort(lat, kind="stable")
    cum = np.cumsum(weight[order]) / weight.sum()
    return float(lat[order][np.argmax(cum >= q - 1e-12)])


@pytest.mark.parametrize("model", ["ba", "n-1c"])
@pytest.mark.parametrize("q", [50, 75, 90])
def test_a_percentile_objective_finds_the_brute_force_optimum(model, q):
    """Every assignment of the six keys within the bound, costed by its p-th percentile (BA:
    all reads in normal operation; N-1C: the worst failure's, the failed datacenter's readers
    redirected) and then by
    the mean objective: the optimiser's placement has the least percentile, and the least
    mean objective among the assignments that reach it."""
    topo = P.load_topology(SMALL)
    n, d, cap = 6, 4, 3
    _, _, cost, subsets = brute_force(SMALL_READS, topo.rtt, 2, cap, model)
    w = SMALL_READS / SMALL_READS.sum()
    lat = {None: P.set_latency(subsets, topo.rtt)} | {
        k: np.array([failure_latency(m, topo.rtt, k) for m in subsets]) for k in range(d)}  # [set, i]

    def percentile(choice):
        if model == "ba":
            return lower_quantile(lat[None][choice].ravel(), w.ravel(), q / 100)
        return max(lower_quantile(lat[k][choice].ravel(), w.ravel(), q / 100) for k in range(d))
    member = np.array([[j in m for j in range(d)] for m in subsets], dtype=int)
    best = (math.inf, math.inf)
    for choice in itertools.product(range(len(subsets)), repeat=n):
        choice = np.array(choice)
        if (member[choice].sum(axis=0) <= cap).all():
            best = min(best, (percentile(choice), float(cost[np.arange(n), choice].sum())))
    placed = P.place(long_demand(SMALL_READS, SMALL["datacenters"]), SMALL, model, balance=1.0, mip_rel_gap=0,
                     objective=f"p{q}", progress=None)
    chosen = np.array([subsets.index(tuple(sorted(SMALL["datacenters"].index(x)
                                                   for x in placed.sets[placed.set_per_id[k]]))) for k in range(n)])
    assert placed.info["threshold_ms"] == best[0] == percentile(chosen)
    assert float(cost[np.arange(n), chosen].sum()) == pytest.approx(best[1], rel=1e-7)
    assert placed.info["minimises"] == f"p{q}"
    o = placed.predictions["overall"]  # the predictions report the objective's percentile too
    reported = o["normal"][f"p{q}"] if model == "ba" else max(f[f"p{q}"] for f in o["failure"].values())
    assert reported == best[0]


def test_each_objective_is_best_at_its_own_measure():
    """On the paper's topology with per-datacenter hot sets: the p90 placement's p90 is at
    most the mean placement's, its mean at least; the threshold found is the predicted p90."""
    demand, _ = paper_demand(3000)
    mean = P.place(demand, PAPER, "ba", mip_rel_gap=0, progress=None)
    tail = P.place(demand, PAPER, "ba", objective="p90", mip_rel_gap=0, progress=None)
    m, t = mean.predictions["overall"]["normal"], tail.predictions["overall"]["normal"]
    assert t["p90"] <= m["p90"] and m["mean"] <= t["mean"]
    assert tail.info["threshold_ms"] == t["p90"]


def test_n1c_trades_normal_latency_for_the_worst_failure():
    demand = long_demand(SMALL_READS, SMALL["datacenters"])
    ba = P.place(demand, SMALL, "ba", balance=1.0, mip_rel_gap=0, progress=None).predictions
    n1c = P.place(demand, SMALL, "n-1c", balance=1.0, mip_rel_gap=0, progress=None).predictions
    assert ba["overall"]["normal"]["mean"] <= n1c["overall"]["normal"]["mean"]
    # the paper's measure: each key's read latency when its most critical datacenter fails
    by_key = lambda p: sum(b["read_share"] * max(b["failure_ms"].values()) for b in p["buckets"])  # noqa: E731
    assert by_key(n1c) < by_key(ba)


@pytest.mark.parametrize("reader", ["VA", "SG", "SP"])
def test_n1c_puts_a_single_readers_second_replica_where_its_clients_go_when_it_fails(reader):
    """A key read only from one datacenter: N-1C gives it a replica there and the second at
    the datacenter nearest it, where the reader's clients are sent while its storage is down
    (the paper's failure, §VIII-E). With the reader's demand dropped under its own failure,
    as before, every second replica cost the same and the choice was arbitrary."""
    topo = P.load_topology(PAPER)
    i = topo.dcs.index(reader)
    nearest = topo.dcs[min((j for j in range(topo.d) if j != i), key=lambda j: topo.rtt[i, j])]
    demand = pd.DataFrame([(0, reader, 100.0, 0.0)], columns=["key_id", "dc", "reads", "writes"])
    placed = P.place(demand, PAPER, "n-1c", f=2, keys=1, balance=3.0, progress=None)
    assert placed.sets[placed.set_per_id[0]] == (reader, nearest)
    o = placed.predictions["overall"]
    assert o["normal"]["mean"] == 0
    assert o["failure"][reader]["mean"] == topo.rtt[i, topo.dcs.index(nearest)]  # the redirect hop, then local
    assert o["most_critical_dc"] == reader


@pytest.mark.parametrize("model", ["ba", "n-1c"])
def test_a_demand_without_reads_still_places(model):
    """Written but never read: every set costs 0 (no division of nothing by nothing)."""
    demand = pd.DataFrame([(k, "VA", 0.0, 5.0) for k in range(4)], columns=["key_id", "dc", "reads", "writes"])
    placed = P.place(demand, PAPER, model, f=2, keys=4, balance=3.0, progress=None)
    assert len(placed.set_per_id) == 4 and placed.info["objective"] == 0


def paper_demand(n=3000, locality=0.8):
    dcs = P.load_topology(PAPER).dcs
    return P.expected_demand(n, 1.2, locality, dcs, 10_000, 1_000), dcs


def test_one_per_group_and_the_balance_bound_hold_in_the_table(tmp_path):
    demand, dcs = paper_demand()
    placed = P.place(demand, PAPER, "ba", balance=1.2, one_per_group=True, progress=None)
    placed.write(tmp_path / "t.csv", "test")
    sid, sets, bucket = P.read_table(tmp_path / "t.csv", dcs, 2, keys=3000)
    for s in sets:  # groups by index modulo f = 2: {VA, SP, TYO} and {CA, LDN, SG}
        assert sorted(dcs.index(x) % 2 for x in s) == [0, 1], s
    per_dc = {dc: int(sum(np.sum(sid == i) for i, s in enumerate(sets) if dc in s)) for dc in dcs}
    bound = math.ceil(1.2 * 2 * 3000 / 6)
    assert max(per_dc.values()) <= bound and sum(per_dc.values()) == 2 * 3000
    assert per_dc == placed.info["keys_per_dc"]
    # without one_per_group the optimiser does pair datacenters of one group, and without a
    # real bound it piles keys far beyond the bound: both constraints are doing work
    free = P.place(demand, PAPER, "ba", balance=3.0, progress=None)
    assert any(sorted(dcs.index(x) % 2 for x in s) != [0, 1] for s in free.sets)
    assert max(free.info["keys_per_dc"].values()) > bound


def test_refusals_of_the_models_arguments():
    demand, _ = paper_demand(600)
    with pytest.raises(ConfigError) as e:
        P.place(demand, PAPER, "n-1c", f=1, progress=None)
    assert e.value.field == "--model" and ">= 2" in str(e.value)
    with pytest.raises(ConfigError) as e:
        P.place(demand, PAPER, "ba", f=4, one_per_group=True, progress=None)
    assert e.value.field == "--one-per-group"
    with pytest.raises(ConfigError) as e:
        P.place(demand, PAPER, "ba", balance=0.9, progress=None)
    assert e.value.field == "--balance"
    with pytest.raises(ConfigError) as e:
        P.place(demand, {"datacenters": ["A", "B"], "rtt_ms": {}, "replication_factor": 1}, "ba", progress=None)
    assert "rtt_ms.A.B" in str(e.value) and "missing" in str(e.value)


def test_the_model_predicts_va_most_critical_for_the_placement_experiment():
    """workloads/placement.yaml fails, among others, the datacenter whose failure hurts BA
    most (still VA), with its clients redirected as the paper's failure has them."""
    exp = yaml.safe_load((ROOT / "workloads" / "placement.yaml").read_text())
    w = exp["workload"]
    topo = P.load_topology(ROOT / "workloads" / exp["topology"]["file"], exp["topology"]["replication_factor"])
    demand = P.expected_demand(w["keys"], w["zipf"], w["locality"], topo.dcs, 1 - w["write_fraction"],
                               w["write_fraction"])
    placed = P.place(demand, ROOT / "workloads" / exp["topology"]["file"], "ba", f=topo.f, progress=None)
    critical = placed.predictions["overall"]["most_critical_dc"]
    assert critical == "VA"
    assert [(x["dc"], x["clients"]) for x in exp["faults"] if x["kind"] == "kill"] == [(critical, "redirect")]
    assert critical in exp["sweep"]["faults.0.dc"]


def test_the_experiments_cache_term_is_its_trials_warming_cache():
    """K2's placements in workloads/placement.yaml count its cache as the trial sees it: from
    empty at the start, over the normal window (warm-up end to the kill), at the paced rate;
    placed that way, N-1C's objective in that window is lower than with the steady-state cache
    term (which trusts hits a trial of minutes never gets). Against the plain placement it is
    within 1%: under the paper's failure the redirected readers count as misses and the
    failure term dominates, and the optimiser's worst case is per bucket where this one is
    per key."""
    from k2bench import experiment
    from conftest import SYSTEMS
    doc = experiment.load_file(ROOT / "workloads" / "placement.yaml")
    cfg = experiment.for_system(experiment.resolve(doc, "placement", SYSTEMS), "k2")
    cfg["topology"]["place"] = "n-1c"
    assert P.place_cache_keys(cfg) == 1500
    window = P.place_cache_window(cfg)
    assert window == (40 / P.EXPECTED_DRAWS, 10.0, 95.0)
    plain_cfg = experiment.for_system(experiment.resolve(doc, "placement", SYSTEMS), "paris-star")
    assert P.place_cache_keys(plain_cfg) == 0 and P.place_cache_window(plain_cfg) is None

    topo_doc = ROOT / "workloads" / "topologies" / "paper-local.yaml"
    n, topo = 30000, P.load_topology(ROOT / "workloads" / "topologies" / "paper-local.yaml", 2)
    demand = P.expected_demand(n, 1.2, 0.8, topo.dcs, 950_000, 50_000)
    reads, writes, _ = P.demand_matrices(demand, topo.dcs, n)

    def in_window(pl):  # N-1C's objective, with the hits of the trial's window
        member = np.zeros((n, topo.d), dtype=bool)
        for k in range(n):
            member[k, [topo.dcs.index(x) for x in pl.sets[pl.set_per_id[k]]]] = True
        hit = P.cache_hits(reads, writes, member, 1500, window)
        sets = [tuple(topo.dcs.index(x) for x in pl.sets[s]) for s in pl.set_per_id]
        return P.objective_of(sets, reads, topo, "n-1c", reads * hit)
    plain = P.place(demand, topo_doc, "n-1c", f=2, keys=n, progress=None)
    steady = P.place(demand, topo_doc, "n-1c", f=2, keys=n, cache_keys=1500, progress=None)
    warming = P.place(demand, topo_doc, "n-1c", f=2, keys=n, cache_keys=1500, cache_window=window, progress=None)
    assert in_window(warming) < in_window(steady)
    assert in_window(warming) <= 1.01 * in_window(plain) and in_window(plain) < in_window(steady)


# ------------------------------------------------------------------ the table file

def test_table_round_trip_merges_ranges(tmp_path):
    sets = [("VA", "CA"), ("TYO", "SG"), ("CA", "VA")]
    sid = np.array([0, 0, 0, 1, 1, 2, 0, 0, 0, 0])
    bucket = np.array([3, 3, 3, 1, 1, 2, 3, 3, 4, 4])
    path = tmp_path / "t.csv"
    P.write_table(path, sid, sets, bucket, ["made by a test", "second line"])
    text = path.read_text()
    assert text.splitlines() == ["# made by a test", "# second line", "ids,replicas,bucket", "0-2,VA;CA,3",
                                 "3-4,TYO;SG,1", "5,CA;VA,2", "6-7,VA;CA,3", "8-9,VA;CA,4"]
    got_sid, got_sets, got_bucket = P.read_table(path, ["VA", "CA", "SP", "LDN", "TYO", "SG"], 2, keys=10)
    assert [got_sets[i] for i in got_sid] == [sets[i] for i in sid]  # replica order kept
    assert got_bucket.tolist() == bucket.tolist()
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # no temporary file left
    # a table without the bucket column, rows out of order
    path.write_text("ids,replicas\n5-9,TYO;SG\n0-4,VA;CA\n")
    s2, sets2, b2 = P.read_table(path, ["VA", "CA", "SP", "LDN", "TYO", "SG"], 2)
    assert [sets2[i] for i in s2] == [("VA", "CA")] * 5 + [("TYO", "SG")] * 5 and (b2 == -1).all()


@pytest.mark.parametrize("body, line, words", [
    ("ids,replicas,bucket\n0-4,VA;CA,0\n6-9,VA;CA,0\n", 3, "the ids 5..5 are in no row"),
    ("ids,replicas,bucket\n0-5,VA;CA,0\n5-9,VA;CA,0\n", 3, "overlap an earlier row"),
    ("ids,replicas,bucket\n0-9,VA;XX,0\n", 2, "unknown datacenter 'XX'"),
    ("# a comment\nids,replicas,bucket\n0-9,VA;VA,0\n", 3, "VA is listed twice"),
    ("ids,replicas,bucket\n0-9,VA;CA;SG,0\n", 2, "lists 3 replica datacenters"),
    ("ids,replica\n0-9,VA;CA\n", 1, "the header must be"),
    ("ids,replicas,bucket\n9-0,VA;CA,0\n", 2, "ids must be a key id or a range"),
    ("ids,replicas,bucket\n0-9,VA;CA\n", 2, "a row is 'ids,replicas,bucket'"),
])
def test_a_bad_table_is_refused_with_its_line(tmp_path, body, line, words):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(ConfigError) as e:
        P.read_table(path, ["VA", "CA", "SP", "LDN", "TYO", "SG"], 2)
    assert f"{path}:{line}: " in str(e.value) and words in str(e.value), str(e.value)


def test_a_table_of_the_wrong_size_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    P.write_table(path, np.zeros(10, dtype=int), [("VA", "CA")], None, [])
    with pytest.raises(ConfigError) as e:
        P.read_table(path, ["VA", "CA"], 2, keys=12)
    assert "places 10 keys" in str(e.value) and "--keys 12" in str(e.value)


# ------------------------------------------------------------------ demand

def write_run(root, trials):
    """A run directory: manifest.json listing ``trials`` (dir, system) and their histories
    (``trials[i]["histories"]``: file name -> list of operations)."""
    root.mkdir()
    manifest = {"experiment": "t", "trials": [{"system": t["system"], "dir": t["dir"],
                                               "client_logs": {dc: [] for dc in t.get("dcs", [])}} for t in trials]}
    (root / "manifest.json").write_text(json.dumps(manifest))
    for t in trials:
        clients = root / t["dir"] / "clients"
        clients.mkdir(parents=True)
        for name, ops in t["histories"].items():
            (clients / name).write_text("".join(json.dumps(op) + "\n" for op in ops))
    return root


def rot(keys, ok=True):
    return {"s": 1, "i": 0, "op": "rot", "t0": 1.0, "t1": 2.0, "ok": ok, "r": {k: 1 for k in keys}, "rounds": 1}


def write(keys, ok=True):
    return {"s": 1, "i": 0, "op": "write", "t0": 1.0, "t1": 2.0, "ok": ok, "w": {k: 7 for k in keys}}


def test_demand_from_run_counts_the_clients_ok_operations(tmp_path, capsys):
    run = write_run(tmp_path / "run", [
        {"system": "k2", "dir": "k2", "dcs": ["VA", "CA"], "histories": {
            "history-client-VA.jsonl": [rot(["user1", "user2"]), rot(["user1"]), write(["user2"]),
                                        rot(["user9"], ok=False), rot(["other", "user1"])],
            "history-client-CA.jsonl": [write(["user1", "user3"]), write(["user3"], ok=False), rot(["user3"])],
            "history-load-VA.jsonl": [write([f"user{i}" for i in range(10)])]}},
        {"system": "rad", "dir": "rad", "dcs": ["VA"], "histories": {
            "history-client-VA.jsonl": [rot(["user5"])]}}])
    df = P.demand_from_run(run)
    err = capsys.readouterr().err
    assert "k2" in err and "rad" in err  # which system's trials, when the run has several
    assert "1 access(es) to keys not named user<id>" in err
    got = {(r.key_id, r.dc): (r.reads, r.writes) for r in df.itertuples()}
    assert got == {(1, "VA"): (3, 0), (2, "VA"): (1, 1), (1, "CA"): (0, 1), (3, "CA"): (1, 1)}
    assert str(df["key_id"].dtype) == "int64" and str(df["reads"].dtype) == "int64"
    rad = P.demand_from_run(run, "rad")
    assert rad[["key_id", "dc", "reads", "writes"]].values.tolist() == [[5, "VA", 1, 0]]
    with pytest.raises(ConfigError) as e:
        P.demand_from_run(run, "paris")
    assert e.value.field == "--system" and "k2, rad" in str(e.value)
    (tmp_path / "latest").symlink_to("run")
    assert P.demand_from_run(tmp_path / "latest").equals(df)
    with pytest.raises(ConfigError):
        P.demand_from_run(tmp_path)  # no manifest


def test_the_key_permutation_is_the_workloads():
    # n = 10: 2654435761 mod 10 = 1, coprime: id = (r - 1 + 40503) mod 10
    assert P.id_of_rank(10).tolist() == [(r - 1 + 40503) % 10 for r in range(1, 11)]
    assert P.permutation_multiplier(1000) == 761 and P.permutation_multiplier(14) == 5
    assert P.permutation_multiplier(1) == 1
    # 2654435761 is prime, so m is coprime with every other n; for n = 2654435761 itself m = 0 moves to 1
    assert P.permutation_multiplier(2_654_435_761) == 1
    for n in (2, 3, 7, 30000, 65536, 999_983):
        ids = P.id_of_rank(n)
        assert sorted(ids.tolist()) == list(range(n)), n  # a bijection
        m = P.permutation_multiplier(n)
        assert m != 0 and math.gcd(m, n) == 1
        assert ids[0] == 40503 % n and ids[1] == (m + 40503) % n


def test_expected_demand_follows_the_workload_model():
    n, dcs = 1000, ["VA", "CA", "SP", "LDN"]
    p = P.draw_probabilities(n, 1.2, 0.3, len(dcs))
    assert np.allclose(p.sum(axis=0), 1.0)
    df = P.expected_demand(n, 1.2, 1.0, dcs, [100, 200, 300, 400], 10)
    by_dc = df.groupby("dc")[["reads", "writes"]].sum()
    assert by_dc["reads"].to_dict() == pytest.approx({"VA": 100, "CA": 200, "SP": 300, "LDN": 400})
    assert by_dc["writes"].to_dict() == pytest.approx({dc: 10 for dc in dcs})
    hottest = P.id_of_rank(n)[0]
    for d, dc in enumerate(dcs):
        mine = df[df["dc"] == dc]
        assert int(mine.loc[mine["reads"].idxmax(), "key_id"]) == (hottest + d * (n // len(dcs))) % n
    # locality 0: every datacenter has the global order; the hottest key's share is 1 / H(n, 1.2)
    flat = P.draw_probabilities(n, 1.2, 0.0, 2)
    h = sum(r ** -1.2 for r in range(1, n + 1))
    assert flat[hottest, 0] == pytest.approx(1 / h) and flat[hottest, 1] == pytest.approx(1 / h)


# ------------------------------------------------------------------ command line

def test_k2bench_place_writes_a_valid_table_and_prints_predictions(tmp_path, capsys):
    demand, dcs = paper_demand(1200)
    demand.to_parquet(tmp_path / "d.parquet")
    out = tmp_path / "table.csv"
    code = main(["place", "--model", "n-1c", "--demand", str(tmp_path / "d.parquet"), "--topology", str(PAPER),
                 "--out", str(out), "--balance", "1.1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "buckets" in captured.err and "solving" in captured.err
    assert "normal" in captured.out and "most critical" in captured.out and "solved in" in captured.out
    sid, sets, bucket = P.read_table(out, dcs, 2, keys=1200)
    text = out.read_text()
    assert text.startswith("# k2bench place --model n-1c") and "\nids,replicas,bucket\n" in text
    side = json.loads((tmp_path / "table.csv.json").read_text())
    assert side["model"] == "n-1c" and side["keys"] == 1200 and side["buckets"] == len(side["per_bucket"])
    assert set(side["predictions"]["failure"]) == set(dcs)
    assert side["predictions"]["most_critical_dc"] in dcs
    assert max(side["keys_per_dc"].values()) <= math.ceil(1.1 * 2 * 1200 / 6)
    assert sorted(os.listdir(tmp_path)) == ["d.parquet", "table.csv", "table.csv.json"]


@pytest.mark.parametrize("flags, words", [
    (["--model", "bz"], "--model: must be ba or n-1c"),
    (["--model", "ba", "--balance", "x"], "--balance: must be a number"),
    (["--model", "ba", "--balance", "0.5"], "--balance: must be at least 1"),
    (["--model", "ba", "--keys", "10"], "--keys: is 10, but the demand names key id 299"),
    (["--model", "ba", "--buckets", "hot=x"], "--buckets: hot must be an integer"),
    (["--model", "n-1c", "--replication-factor", "1"], "--model: n-1c plans for a datacenter failure"),
    (["--balance", "1.2"], "--model: missing"),
    (["--model", "ba", "--objective", "p100"], "--objective: must be mean or a percentile"),
    (["--model", "ba", "--objective", "median"], "--objective: must be mean or a percentile"),
])
def test_bad_flags_of_k2bench_place_give_one_line(tmp_path, capsys, flags, words):
    demand, _ = paper_demand(300)
    demand.to_parquet(tmp_path / "d.parquet")
    code = main(["place", "--demand", str(tmp_path / "d.parquet"), "--topology", str(PAPER),
                 "--out", str(tmp_path / "t.csv"), *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("k2bench: ") and words in err[-1], err
    assert all(not line.startswith(("usage", "Traceback")) for line in err)
    assert not (tmp_path / "t.csv").exists()


def test_k2bench_demand_writes_parquet_and_refuses_a_terminal(tmp_path, capsys, monkeypatch):
    run = write_run(tmp_path / "run", [{"system": "k2", "dir": "k2", "dcs": ["VA"], "histories": {
        "history-client-VA.jsonl": [rot(["user1", "user2"]), write(["user2"])]}}])
    assert main(["demand", str(run), "--out", str(tmp_path / "d.parquet")]) == 0
    df = pd.read_parquet(tmp_path / "d.parquet")
    assert df.values.tolist() == [[1, "VA", 1, 0], [2, "VA", 1, 1]]
    assert "2 keys" in capsys.readouterr().err

    class Tty:
        def isatty(self):
            return True
    monkeypatch.setattr("sys.stdout", Tty())
    assert main(["demand", str(run)]) == 2
    assert "k2bench: --out: the demand is parquet" in capsys.readouterr().err


def test_cache_hits_follow_reads_writes_and_capacity():
    """A key only its own datacenter reads and writes always hits; one another datacenter
    writes as often as it is read hits half the time; a local key needs no cache; LRU shares
    a small cache among the hottest keys."""
    reads = np.array([[10, 0], [10, 0], [0, 5]], dtype=float)
    writes = np.array([[0, 0], [0, 10], [0, 0]], dtype=float)
    local = np.array([[False, True], [False, True], [True, False]])
    hit = P.cache_hits(reads, writes, local, capacity=10)
    assert hit[0, 0] == 1.0 and hit[1, 0] == pytest.approx(0.5) and hit[2, 0] == 0.0  # key 2 is local at A
    # B holds keys 0-1, so only key 2 competes for its cache; the hits are given as if B held
    # none (a key a placement moves away from B): B never touches key 0, writes key 1 (no
    # one else does: its own write is cached) and is the only reader of key 2
    assert hit[0, 1] == 0 and hit[1, 1] == 1.0 and hit[2, 1] == 1.0
    small = P.cache_hits(reads, writes, local, capacity=0.5)  # keys 0 and 1, equally hot, share half a key
    assert small[0, 0] == pytest.approx(0.25) and small[1, 0] == pytest.approx(0.125)


def test_the_cache_term_is_the_brute_force_optimum_for_given_hits():
    """With the cache's hits given, the program is the brute force over the misses: hits
    cost 0 on any set, so only the misses' weights change."""
    topo = P.load_topology(SMALL)
    hits = SMALL_READS * np.array([[0.9, 0, 0, 0], [0, 0.5, 0, 0], [0.8, 0, 0, 0],
                                    [0, 0, 0, 0], [0, 0.9, 0, 0], [0.5, 0.5, 0, 0]])
    misses = SMALL_READS - hits
    best, _, _, _ = brute_force(misses, topo.rtt, 2, 3, "ba")  # mean over the misses
    solved = P.solve(SMALL_READS, np.ones(6, dtype=int), topo, "ba", 1.0, False, 6, mip_rel_gap=0, hits_b=hits)
    assert solved.objective == pytest.approx(best * misses.sum() / SMALL_READS.sum(), rel=1e-7)
    plain = P.solve(SMALL_READS, np.ones(6, dtype=int), topo, "ba", 1.0, False, 6, mip_rel_gap=0)
    assert solved.sets != plain.sets  # the hits move keys: key 0 mostly hits in A, so it gives up its A replica
    assert P.objective_of(solved.sets, SMALL_READS, topo, "ba", hits) == pytest.approx(solved.objective, rel=1e-7)


def test_placing_with_the_cache_is_never_worse_than_without_it_under_the_cache():
    """On the paper's topology with locality: the placement computed with K2's cache term
    has a predicted mean (hits at 0 ms) no higher than the one computed without it, both
    costed with the cache and their own hits (the iteration keeps the best it saw, the plain
    placement included); its predictions and info record the cache."""
    demand, dcs = paper_demand(3000)
    cap = 150  # 5% of the keys per datacenter
    plain = P.place(demand, PAPER, "ba", progress=None)
    cached = P.place(demand, PAPER, "ba", cache_keys=cap, progress=None)
    reads, writes, _ = P.demand_matrices(demand, dcs, 3000)
    member = np.zeros((3000, len(dcs)), dtype=bool)
    for k in range(3000):
        member[k, [dcs.index(x) for x in plain.sets[plain.set_per_id[k]]]] = True
    hit = P.cache_hits(reads, writes, member, cap)
    lat = P.set_latency([tuple(dcs.index(x) for x in s) for s in plain.sets], P.load_topology(PAPER).rtt)
    plain_mean = float(((reads * (1 - hit)) * lat[plain.set_per_id]).sum() / reads.sum())
    assert cached.predictions["overall"]["normal"]["mean"] <= round(plain_mean, 3)
    assert cached.info["cache_keys_per_dc"] == cap and 1 <= cached.info["cache_rounds"] <= P.CACHE_ROUNDS


def test_a_placement_tables_cache_key_changes_with_the_optimiser_not_with_its_report(tmp_path):
    import shutil
    from pathlib import Path
    pkg = tmp_path / "placement"
    shutil.copytree(Path(P.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = P.code_fingerprint(pkg)
    assert before == P.code_fingerprint()
    for name in P.NOT_THE_OPTIMISER:
        (pkg / name).write_text((pkg / name).read_text() + "\n# changed\n")
    assert P.code_fingerprint(pkg) == before, "the report and the bench compute no table"
    (pkg / "solve.py").write_text((pkg / "solve.py").read_text() + "\n# changed\n")
    assert P.code_fingerprint(pkg) != before, "a changed optimiser never reuses an old table"
