"""The topology files shipped in workloads/ are valid, and the paper's matches its Fig. 6."""
import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOPOLOGIES = sorted((ROOT / "workloads" / "topologies").glob("*.yaml"))

# K2 paper, Fig. 6, in ms.
PAPER_DCS = ["VA", "CA", "SP", "LDN", "TYO", "SG"]
PAPER_RTT = [
    [0, 60, 146, 76, 162, 243],
    [60, 0, 194, 136, 110, 178],
    [146, 194, 0, 214, 269, 333],
    [76, 136, 214, 0, 233, 163],
    [162, 110, 269, 233, 0, 68],
    [243, 178, 333, 163, 68, 0],
]


def matrix(doc):
    dcs = doc["datacenters"]
    m = {(a, b): None for a in dcs for b in dcs}
    for a in dcs:
        m[(a, a)] = 0
    for a, row in doc["rtt_ms"].items():
        for b, v in row.items():
            assert a in dcs and b in dcs, f"rtt_ms.{a}.{b}: unknown datacenter"
            assert m[(b, a)] in (None, v), f"rtt_ms.{a}.{b}: asymmetric"
            m[(a, b)] = m[(b, a)] = v
    missing = [k for k, v in m.items() if v is None]
    assert not missing, f"missing RTTs: {missing}"
    return m


def test_there_are_topology_files():
    assert TOPOLOGIES, "workloads/topologies/*.yaml"


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.name)
def test_topology_is_complete_and_consistent(path):
    doc = yaml.safe_load(path.read_text())
    matrix(doc)
    d, f = len(doc["datacenters"]), doc["replication_factor"]
    placement = doc.get("placement", "groups")
    if placement == "groups":
        assert d % f == 0
    elif placement == "rings":  # every datacenter in exactly one ring, one replica per ring
        members = [dc for ring in doc["rings"] for dc in ring]
        assert sorted(members) == sorted(doc["datacenters"]) and len(doc["rings"]) == f
    else:  # one server per partition replica
        assert doc["servers_per_dc"] * d == doc["partitions"] * f
    assert doc["servers_per_dc"] >= 1
    assert ("servers" in doc) != ("base_port" in doc)


def test_paper_topology_matches_the_spec():
    doc = yaml.safe_load((ROOT / "workloads" / "topologies" / "paper-local.yaml").read_text())
    assert doc["datacenters"] == PAPER_DCS
    m = matrix(doc)
    for i, a in enumerate(PAPER_DCS):
        for j, b in enumerate(PAPER_DCS):
            assert m[(a, b)] == PAPER_RTT[i][j], f"{a}-{b}"
    assert doc["servers_per_dc"] == 4 and doc["replication_factor"] == 2
