"""Systems on a placement table (placement: table): the orchestrator checks the table against
the experiment and ships it with each trial, the manifest records it, and K2 and PaRiS* read
every key where the table put it, without a consistency violation."""
import json
import textwrap

import pytest

from k2bench import experiment
from k2bench.deploy import LocalDeployment
from k2bench.errors import ConfigError
from k2bench.deploy.hosts import LocalHost
from k2bench.env import Env
from k2bench.spec.topology import placement_of, resolve_topology
from k2bench.spec.validate import validate

from conftest import ROOT, SYSTEMS
from test_e2e import k2bench

FIXTURE = ROOT / "tests" / "fixtures" / "table-placement.yaml"
TABLE = ROOT / "tests" / "fixtures" / "table-200.csv"


def resolved(overrides: dict) -> dict:
    doc = {"systems": ["k2", "paris-star"],
           "topology": {"file": "topologies/paper-local.yaml", "placement": "table",
                        "placement_table": "../tests/fixtures/table-200.csv"},
           "workload": {"keys": 200}}
    for section, fields in overrides.items():
        doc.setdefault(section, {}).update(fields)
    return experiment.resolve(doc, "t", SYSTEMS)


def env(jar):
    return Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))


def test_the_manifest_records_the_table_and_loaders_run_where_first_replicas_are(jar):
    e = env(jar)
    exp = resolved({})
    validate(e, exp)
    p = placement_of(resolve_topology(e, exp))
    assert p["placement"] == "table" and p["first_replica_dcs"] == ["VA", "TYO"]
    t = p["table"]
    assert t["keys"] == 200 and t["replica_sets"] == 2 and len(t["sha256"]) == 64
    assert t["keys_per_dc"] == {"VA": 100, "CA": 100, "SP": 0, "LDN": 0, "TYO": 100, "SG": 100}


def test_a_table_that_does_not_fit_the_experiment_is_refused_before_anything_starts(jar, tmp_path):
    e = env(jar)
    with pytest.raises(ConfigError) as err:
        validate(e, resolved({"workload": {"keys": 300}}))
    assert err.value.field == "workload.keys" and "places 200" in str(err.value) and "--keys" in str(err.value)
    bad = tmp_path / "bad.csv"
    bad.write_text("ids,replicas\n0-99,VA;CA\n150-199,TYO;SG\n")
    with pytest.raises(ConfigError) as err:
        validate(e, resolved({"topology": {"placement_table": str(bad)}}))
    assert "bad.csv:3: the ids 100..149 are in no row" in str(err.value), str(err.value)
    with pytest.raises(ConfigError) as err:  # RAD needs replica groups
        validate(e, experiment.resolve({"systems": ["rad"], "topology": {
            "file": "topologies/paper-local.yaml", "placement": "table",
            "placement_table": "../tests/fixtures/table-200.csv"}, "workload": {"keys": 200}}, "t", SYSTEMS))
    assert "rad does not run on placement: table" in str(err.value)
    with pytest.raises(ConfigError) as err:
        experiment.resolve({"topology": {"placement": "tables"}}, "t", SYSTEMS)
    assert "groups, partitions, rings or table" in str(err.value)


def test_locality_does_not_combine_with_the_paris_key_choice(jar):
    with pytest.raises(ConfigError) as err:
        validate(env(jar), resolved({"workload": {"locality": 0.5, "partitions_per_op": 2}}))
    assert err.value.field == "workload.locality" and "set one of them to 0" in str(err.value)
    with pytest.raises(ConfigError) as err:
        experiment.resolve({"workload": {"locality": 1.5}}, "t", SYSTEMS)
    assert "workload.locality" in str(err.value)


def replicas(table=TABLE) -> dict[int, set[str]]:
    out = {}
    for line in table.read_text().splitlines():
        if line and not line.startswith(("#", "ids")):
            ids, dcs, _ = line.split(",")
            first, _, last = ids.partition("-")
            for i in range(int(first), int(last or first) + 1):
                out[i] = set(dcs.split(";"))
    return out


@pytest.mark.cluster
def test_k2_and_paris_star_read_each_key_where_the_table_put_it(jar, tmp_path):
    r = k2bench("run", str(FIXTURE), "--runs", str(tmp_path), timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run = (tmp_path / "latest").resolve()
    where = replicas()
    for system in ("k2", "paris-star"):
        d = run / system
        c = json.loads((d / "consistency.json").read_text())
        assert c["checked"]["reads"] > 1000 and c["violations"]["count"] == 0, (system, c["violations"]["listed"][:3])
        assert (d / "placement.csv").read_text() == TABLE.read_text(), "the trial ships its table"
        assert sorted(p.name for p in (d / "clients").glob("history-load-*.jsonl")) == [
            "history-load-TYO.jsonl", "history-load-VA.jsonl"], "loaders run where first replicas are"
        local = {"local": [0, 0], "remote": [0, 0]}  # [reads, reads with a wide-area round]
        for dc in ("VA", "CA", "SP", "LDN", "TYO", "SG"):
            written = set()  # (session, key): PaRiS* serves a session's own writes from its cache
            for line in (d / "clients" / f"history-client-{dc}.jsonl").read_text().splitlines():
                op = json.loads(line)
                for k in op.get("w") or {}:
                    written.add((op["s"], k))
                if not op["ok"] or op["op"] != "rot" or len(op["r"]) != 1:
                    continue
                key = next(iter(op["r"]))
                kind = "local" if dc in where[int(key[4:])] else "remote"
                if kind == "remote" and (op["s"], key) in written:
                    continue
                local[kind][0] += 1
                local[kind][1] += op["rounds"] > 0
        # a key the table puts in the client's datacenter is read there, always
        assert local["local"][0] > 300 and local["local"][1] == 0, (system, local)
        # the others cross the wide area: always without a datacenter cache (PaRiS*), unless
        # K2's cache has them
        share = local["remote"][1] / local["remote"][0]
        assert local["remote"][0] > 300 and share >= (1.0 if system == "paris-star" else 0.4), (system, local)


def test_any_placement_writes_itself_as_a_table_that_loads_back_the_same(jar, tmp_path):
    """`topology --table-out` (how analysis asks what a hash placement does with each key)
    writes the groups placement as a table; loaded as placement: table it places every key
    where groups did, and the loader refuses --table-out without --keys."""
    import yaml
    e = env(jar)
    groups = ROOT / "workloads" / "topologies" / "paper-local.yaml"
    out = tmp_path / "groups.csv"
    e.check_output("topology", str(groups), "--table-out", str(out), "--keys", "3000")
    rows = [line for line in out.read_text().splitlines() if line and not line.startswith(("#", "ids"))]
    assert len(rows) > 100 and rows[-1].split(",")[0].endswith("2999")
    doc = yaml.safe_load(groups.read_text()) | {"placement": "table", "placement_table": str(out)}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(doc))
    table = json.loads(e.check_output("topology", str(tmp_path / "t.yaml")))["placement_table"]
    assert table["keys"] == 3000 and table["replica_sets"] == 3  # groups: one set per group position
    # groups give each datacenter one position: a third of the keys each, within hashing noise
    assert all(900 < n < 1100 for n in table["keys_per_dc"].values()), table
    pairs = {frozenset(r.split(",")[1].split(";")) for r in rows}
    assert pairs == {frozenset({"VA", "CA"}), frozenset({"SP", "LDN"}), frozenset({"TYO", "SG"})}
    with pytest.raises(ConfigError) as err:
        e.check_output("topology", str(groups), "--table-out", str(tmp_path / "x.csv"))
    assert "--keys" in str(err.value)
    assert not (tmp_path / "x.csv").exists()
