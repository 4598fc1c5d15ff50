"""Experiment files: defaults, validation with one-line errors, sweeps, inheritance."""
import pathlib

import pytest
import yaml

from k2bench import experiment
from k2bench.errors import ConfigError

from conftest import ROOT, SYSTEMS

WORKLOADS = ROOT / "workloads"


def resolve(doc, name="t"):
    return experiment.resolve(doc, name, SYSTEMS)


def error(doc) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        resolve(doc)
    assert all("\n" not in str(x) for x in e.value.errors), "one line each"
    return e.value


@pytest.mark.parametrize("path", sorted(WORKLOADS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_experiment_resolves(path):
    exp = experiment.resolve(experiment.load_file(path), path.stem, SYSTEMS)
    assert exp["name"] == path.stem
    d = exp["duration"]
    assert d["warmup_s"] > 0 and d["cooldown_s"] > 0, "warm-up and cool-down are explicit and trimmed"
    assert experiment.points(exp)


@pytest.mark.parametrize("name", ["paris-default", "paris-50-50", "paris-locality"])
def test_the_paris_papers_figures_are_load_sweeps_at_every_locality(name):
    """Its Fig. 2 and Fig. 4 are latency against throughput as client threads grow: an
    experiment's own sweep replaces the inherited one whole, so locality must sweep both."""
    exp = experiment.resolve(experiment.load_file(WORKLOADS / f"{name}.yaml"), name, SYSTEMS)
    points = [(cfg["clients"]["threads_per_dc"], cfg["workload"]["local_fraction"])
              for _, cfg in experiment.points(exp)]
    threads = {t for t, _ in points}
    assert len(threads) >= 3, f"{name}: a load sweep over client threads, got {points}"
    ratios = {r for _, r in points}
    for r in ratios:
        assert {t for t, rr in points if rr == r} == threads, f"{name}: the whole load sweep at {r}"
    if name == "paris-locality":
        assert ratios == {1.0, 0.95, 0.9, 0.5}, "the paper's 100:0, 95:5, 90:10 and 50:50"


def test_defaults_are_the_papers():
    exp = resolve({})
    w = exp["workload"]
    assert (w["keys"], w["keys_per_op"], w["columns"], w["value_bytes"]) == (1_000_000, 5, 5, 128)
    assert (w["zipf"], w["write_fraction"], w["wot_fraction"]) == (1.2, 0.01, 0.5)
    assert exp["server"]["cache_fraction"] == 0.05
    assert set(exp["systems"]) == {"k2", "rad", "paris-star"}  # the K2 paper's three (their descriptors say so)
    assert exp["systems"] == SYSTEMS.defaults()
    assert exp["duration"]["warmup_s"] == 540 and exp["duration"]["cooldown_s"] == 20


def test_unknown_fields_are_named():
    assert error({"workload": {"zipff": 1.2}}).field == "workload.zipff"
    assert error({"workloads": {}}).field == "workloads"


@pytest.mark.parametrize("doc, field, hint", [
    ({"worklaod": {}}, "worklaod", "unknown field (did you mean workload?); allowed: check, clients"),
    ({"workload": {"zipff": 1.2}}, "workload.zipff", "unknown field (did you mean zipf?); allowed here: columns"),
    ({"systems": ["k2", "rda"]}, "systems[1]", "unknown system 'rda' (did you mean rad?); available: "),
    ({"topology": {"placement": "group"}}, "topology.placement", "got 'group' (did you mean groups?)"),
    ({"faults": [{"kind": "kil", "dc": "VA", "at_s": 1}]}, "faults[0].kind", "got 'kil' (did you mean kill?)"),
    ({"faults": [{"kind": "kill", "dc": "VA", "at": 1}]}, "faults[0].at", "for kill (did you mean at_s?); allowed"),
    ({"sweep": {"workload.zipff": [1]}}, "sweep.workload.zipff", "not a sweepable field (did you mean workload.zipf?)"),
    ({"faults": [{"kind": "kill", "dc": "VA", "at_s": 1}], "sweep": {"faults.0.d": ["CA"]}}, "sweep.faults.0.d",
     "has no field 'd' to sweep (did you mean dc?); its fields: "),
    ({"systems": ["k2", "rad"], "per_system": {"rda": {}}}, "per_system.rda", "systems (did you mean rad?); they are"),
    ({"systems": ["k2"], "per_system": {"k2": {"workloads": {"zipf": 1}}}}, "per_system.k2.workloads",
     "(did you mean workload?); allowed: topology"),
    ({"testing": {"mutent": None}}, "testing", "only testing.mutant is allowed (did you mean mutant?)"),
])
def test_a_refused_name_suggests_the_closest_known_one(doc, field, hint):
    e = error(doc)
    assert e.field == field and hint in e.problem, str(e)
    assert "did you mean" not in error({"wxyz": 1}).problem, "nothing close, nothing suggested"


def test_a_misspelt_top_level_field_names_the_file(tmp_path, capsys):
    from k2bench import cli

    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: default\nworklaod:\n  zipf: 1.4\n")
    assert cli.main(["validate", str(mine)]) == 2
    assert capsys.readouterr().err.startswith(f"k2bench: {mine}: worklaod: unknown field (did you mean workload?); ")
    mine.write_text("extends: defualt\n")
    assert cli.main(["validate", str(mine)]) == 2
    assert f"{mine}: extends: no experiment 'defualt' (did you mean default?)" in capsys.readouterr().err
    assert cli.main(["validate", "smok"]) == 2
    assert "no experiment 'smok' in " in capsys.readouterr().err


def test_wrong_types_and_ranges_are_named():
    assert error({"workload": {"keys": "many"}}).field == "workload.keys"
    assert error({"workload": {"write_fraction": 1.5}}).field == "workload.write_fraction"
    assert error({"workload": {"zipf": 0}}).field == "workload.zipf"
    assert error({"clients": {"threads_per_dc": 0}}).field == "clients.threads_per_dc"
    assert error({"trials": 0}).field == "trials"
    assert error({"workload": {"keys": 3, "keys_per_op": 5}}).field == "workload.keys_per_op"


def test_jvm_args_are_options_before_the_jar():
    exp = resolve({"clients": {"jvm_args": ["-XX:+UseZGC", "-Dx=1"]}})
    assert exp["server"]["jvm_args"] is None  # resolved per process split (server_jvm_args)
    assert experiment.server_jvm_args(exp, "per_dc") == list(experiment.DEFAULT_JVM_ARGS)
    assert experiment.server_jvm_args(exp, "per_host") == ["-XX:+UseZGC", "-XX:ZCollectionInterval=5"]  # C2, ZGC
    assert exp["clients"]["jvm_args"] == ["-XX:+UseZGC", "-Dx=1"]
    assert resolve({"server": {"jvm_args": []}})["server"]["jvm_args"] == []
    assert error({"server": {"jvm_args": "-XX:+UseZGC"}}).field == "server.jvm_args"
    assert error({"server": {"jvm_args": ["XX:+UseZGC"]}}).field == "server.jvm_args"
    assert "heap_mb" in str(error({"clients": {"jvm_args": ["-Xmx4g"]}}))

    from k2bench.deploy.hosts import LocalHost
    from k2bench.trial.jvm import CLIENT_JVM_ARGS, PRIORITY_JVM_ARGS, java, ycsb
    argv = java(LocalHost(ROOT / "k2bench.jar"), 256, "serve", props={"a": "b"},
                jvm_args=exp["clients"]["jvm_args"])
    assert argv[:argv.index("-jar")] == ["java", *PRIORITY_JVM_ARGS, "-XX:+UseZGC", "-Dx=1", "-Xmx256m", "-Da=b"]
    assert argv[argv.index("-jar") + 2:] == ["serve"]
    # the lowest Java priority (colocated client threads) is nice 4, the servers' (4) nice 2,
    # every other nice 0; a client JVM of its own runs its normal priority at nice 4 too
    assert "-XX:ThreadPriorityPolicy=1" in PRIORITY_JVM_ARGS and "-XX:JavaPriority1_To_OSPriority=4" in PRIORITY_JVM_ARGS
    assert "-XX:JavaPriority4_To_OSPriority=2" in PRIORITY_JVM_ARGS
    assert all(f"-XX:JavaPriority{p}_To_OSPriority=0" in PRIORITY_JVM_ARGS for p in (2, 3, *range(5, 11)))
    client = ycsb(LocalHost(ROOT / "k2bench.jar"), 256, "-t", jvm_args=[])
    assert client[:client.index("-cp")] == ["java", *CLIENT_JVM_ARGS, "-Xmx256m"]
    assert CLIENT_JVM_ARGS[-1] == "-XX:JavaPriority5_To_OSPriority=4"  # the last of a flag wins


def test_unknown_system_lists_the_known_ones():
    e = error({"systems": ["k2", "k3"]})
    assert e.field == "systems[1]" and "bpr, cops-pr, k2, karma, nocc, paris, paris-star, rad" in str(e)


def test_a_system_or_mutant_that_is_not_a_name_is_one_line_not_a_traceback():
    e = error({"systems": ["k2", ["rad"]]})
    assert e.field == "systems[1]" and "must be a system's name" in str(e)
    e = error({"testing": {"mutant": ["read-pending"]}})
    assert e.field == "testing.mutant" and "must be a mutant's name or null" in str(e)


def test_distributions_must_sum_to_one():
    ok = resolve({"workload": {"keys_per_op": {1: 0.5, 2: 0.5}}})
    assert ok["workload"]["keys_per_op"] == {1: 0.5, 2: 0.5}
    assert error({"workload": {"keys_per_op": {1: 0.5, 2: 0.4}}}).field == "workload.keys_per_op"
    assert error({"workload": {"keys_per_op": {0: 1.0}}}).field == "workload.keys_per_op.0"


def test_sweeps_expand_to_the_cartesian_product():
    exp = resolve({"sweep": {"workload.zipf": [0.9, 1.4], "server.cache_fraction": [0.01, 0.05, 0.15]}})
    pts = experiment.points(exp)
    assert len(pts) == 6
    ids = [p for p, _ in pts]
    assert "zipf=0.9_cache_fraction=0.15" in ids
    cfg = dict(pts)["zipf=1.4_cache_fraction=0.01"]
    assert cfg["workload"]["zipf"] == 1.4 and cfg["server"]["cache_fraction"] == 0.01
    assert error({"sweep": {"workload.nope": [1]}}).field == "sweep.workload.nope"
    assert error({"sweep": {"workload.zipf": [0.9, -1]}}).field == "sweep.workload.zipf[1]"


def test_per_system_overrides_apply_to_their_system_only_and_are_checked_as_their_fields():
    exp = resolve({"systems": ["k2", "karma"], "sweep": {"workload.zipf": [0.9, 1.2]},
                   "per_system": {"karma": {"topology": {"file": "topologies/karma-rings.yaml",
                                                         "replication_factor": None},
                                            "workload": {"wot_fraction": 0, "write_fraction": 0.03}}}})
    by = {(pid, system): cfg for pid, system, cfg in experiment.system_points(exp)}
    assert len(by) == 4
    karma, k2 = by["zipf=0.9", "karma"], by["zipf=0.9", "k2"]
    assert karma["topology"]["file"] == "topologies/karma-rings.yaml" and karma["topology"]["replication_factor"] is None
    assert karma["workload"]["wot_fraction"] == 0.0 and karma["workload"]["write_fraction"] == 0.03
    assert karma["workload"]["zipf"] == 0.9 and by["zipf=1.2", "karma"]["workload"]["zipf"] == 1.2  # sweep kept
    assert k2["topology"]["file"] == "topologies/paper-local.yaml" and k2["workload"]["wot_fraction"] == 0.5
    assert experiment.for_system(exp, "k2") is exp  # no overrides: the configuration itself
    # the experiment's own sections are untouched
    assert exp["workload"]["wot_fraction"] == 0.5 and exp["topology"]["file"] == "topologies/paper-local.yaml"

    e = error({"systems": ["k2"], "per_system": {"karma": {"workload": {"zipf": 1}}}})
    assert e.field == "per_system.karma" and "not one of the experiment's systems; they are k2:" in str(e)
    e = error({"systems": ["k2"], "per_system": {"k2": {"duration": {"measure_s": 5}}}})
    assert e.field == "per_system.k2.duration" and "allowed: topology, workload, server, clients, load" in str(e)
    e = error({"systems": ["k2"], "per_system": {"k2": {"workload": {"zipf": -1}}}})
    assert e.field == "per_system.k2.workload.zipf" and "must be > 0" in str(e)
    e = error({"systems": ["k2"], "per_system": {"k2": {"workload": {"nope": 1}}}})
    assert e.field == "per_system.k2.workload.nope" and "unknown field" in str(e)
    e = error({"systems": ["k2"], "per_system": {"k2": {"workload": {"keys": 2, "keys_per_op": 3}}}})
    assert e.field == "per_system.k2.workload.keys_per_op"
    e = error({"systems": ["k2"], "sweep": {"workload.zipf": [1, 2]}, "per_system": {"k2": {"workload": {"zipf": 1}}}})
    assert e.field == "per_system.k2.workload.zipf" and "is swept" in str(e)
    assert error({"systems": ["k2"], "per_system": {"k2": []}}).field == "per_system.k2"
    assert error({"systems": ["k2"], "per_system": {"k2": {"workload": {}}}}).field == "per_system.k2.workload"
    # one system's pacing is checked with its own threads and target
    e = error({"systems": ["k2"], "per_system": {"k2": {"clients": {"threads_per_dc": 100, "target_ops_per_s_per_dc": 1}}}})
    assert "YCSB 0.17 can pace" in str(e)


def test_extends_inherits_and_overrides(tmp_path):
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({"workload": {"keys": 10, "zipf": 0.9}, "trials": 2}))
    (tmp_path / "child.yaml").write_text(yaml.safe_dump({"extends": "base", "workload": {"zipf": 1.4}}))
    exp = experiment.resolve(experiment.load_file(tmp_path / "child.yaml"), "child", SYSTEMS)
    assert exp["name"] == "child"
    assert exp["workload"]["keys"] == 10 and exp["workload"]["zipf"] == 1.4 and exp["trials"] == 2
    (tmp_path / "loop.yaml").write_text(yaml.safe_dump({"extends": "loop"}))
    with pytest.raises(ConfigError) as e:
        experiment.load_file(tmp_path / "loop.yaml")
    assert e.value.field == "extends"


def test_null_is_a_value_only_where_the_default_is_null():
    e = error({"workload": {"keys": None}})
    assert e.field == "workload.keys" and "must not be null" in e.problem and "1000000" in e.problem
    assert error({"clients": {"jvm_args": None}}).field == "clients.jvm_args"
    e = error({"sweep": {"workload.zipf": [1.2, None]}})
    assert e.field == "sweep.workload.zipf[1]" and e.problem.endswith("; give a value")
    assert "use [] for no options" in error({"clients": {"jvm_args": None}}).problem
    exp = resolve({"clients": {"target_ops_per_s_per_dc": None}, "topology": {"servers_per_dc": None}})
    assert exp["clients"]["target_ops_per_s_per_dc"] is None  # closed loop
    swept = resolve({"sweep": {"clients.target_ops_per_s_per_dc": [10, None]}})["sweep"]
    assert swept == {"clients.target_ops_per_s_per_dc": [10.0, None]}


def test_a_file_anywhere_extends_a_shipped_experiment_or_a_relative_path(tmp_path):
    mine = tmp_path / "elsewhere" / "mine.yaml"
    mine.parent.mkdir()
    mine.write_text(yaml.safe_dump({"extends": "default", "workload": {"zipf": 1.4}}))
    exp = experiment.resolve(experiment.load_file(mine), "mine", SYSTEMS)
    shipped = experiment.resolve(experiment.load_file(WORKLOADS / "default.yaml"), "default", SYSTEMS)
    assert exp["workload"]["zipf"] == 1.4
    assert exp["workload"]["keys"] == shipped["workload"]["keys"] and exp["systems"] == shipped["systems"]
    # A file next to it wins over a shipped one of the same name; a path is relative to the file.
    (mine.parent / "default.yaml").write_text(yaml.safe_dump({"workload": {"keys": 77}}))
    assert experiment.load_file(mine)["workload"] == {"keys": 77, "zipf": 1.4}
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({"trials": 3}))
    mine.write_text(yaml.safe_dump({"extends": "../base.yaml"}))
    assert experiment.load_file(mine) == {"trials": 3}


def test_a_topology_file_next_to_the_experiment_wins_over_workloads(tmp_path, capsys):
    from k2bench import cli

    paper = (WORKLOADS / "topologies" / "paper-local.yaml").read_text()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "three.yaml").write_text(paper.replace("servers_per_dc: 4", "servers_per_dc: 3"))
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({"extends": "smoke", "topology": {"file": "mine/three.yaml"}}))
    mine = tmp_path / "mine" / "exp.yaml"  # its own lookups are next to it; the base's, next to the base
    mine.write_text(yaml.safe_dump({"extends": "../base.yaml", "sweep": {"topology.file": [
        "three.yaml", "topologies/paper-local.yaml"]}, "per_system": {"rad": {"topology": {"file": "three.yaml"}}}}))
    doc = experiment.load_file(mine)
    own = str(tmp_path / "mine" / "three.yaml")
    assert doc["topology"]["file"] == own and doc["per_system"]["rad"]["topology"]["file"] == own
    assert doc["sweep"]["topology.file"] == [own, "topologies/paper-local.yaml"], "not next to it: workloads/'s"
    assert experiment.load_file(WORKLOADS / "partial-replication.yaml")["per_system"]["karma"]["topology"]["file"] \
        == "topologies/karma-rings.yaml", "workloads/' own files are unchanged"
    mine.write_text(yaml.safe_dump({"extends": "smoke", "topology": {"file": "topologies/paper-locl.yaml"}}))
    assert cli.main(["validate", str(mine)]) == 2
    assert capsys.readouterr().err.startswith(
        f"k2bench: {mine}: topology.file: no topology 'topologies/paper-locl.yaml' (did you mean "
        "topologies/paper-local.yaml?) next to the experiment file or in workloads/ (")


def test_a_bad_extends_names_the_users_file_and_the_fix(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"extends": "nosuch"}))
    with pytest.raises(ConfigError) as e:
        experiment.load_file(mine)
    text = str(e.value)
    assert text.startswith(f"{mine}: extends: no experiment 'nosuch'") and "default" in text and "\n" not in text
    # In a chain, the file whose extends is wrong is named, not the one the user gave.
    (tmp_path / "top.yaml").write_text(yaml.safe_dump({"extends": "mine"}))
    with pytest.raises(ConfigError) as e:
        experiment.load_file(tmp_path / "top.yaml")
    assert e.value.file == str(mine) and e.value.in_file(tmp_path / "top.yaml") is e.value


def test_a_field_error_names_the_users_file_on_the_command_line(tmp_path, capsys):
    from k2bench import cli

    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"extends": "default", "workload": {"zipf": -1}}))
    assert cli.main(["validate", str(mine)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"k2bench: {mine}: workload.zipf: must be > 0, got -1.0", err
    broken = tmp_path / "broken.yaml"
    broken.write_text("workload: [")
    assert cli.main(["validate", str(broken)]) == 2
    assert capsys.readouterr().err.strip() == f"k2bench: {broken}: not valid YAML at line 1"


def test_every_independent_problem_of_a_file_is_shown_one_line_each(tmp_path, capsys):
    from k2bench import cli

    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"extends": "smoke", "worklaod": {}, "systems": ["k2", "rda"],
                                    "workload": {"zipff": 1, "keys": "many"}, "server": {"heap_mb": 0},
                                    "trials": 0, "faults": [{"kind": "kil"}, {"kind": "pause", "dc": "VA", "at_s": 1}],
                                    "check": "maybe"}))
    assert cli.main(["validate", str(mine)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[2] for line in lines] == [
        "worklaod", "systems[1]", "workload.zipff", "workload.keys", "server.heap_mb", "trials", "faults[0].kind",
        "faults[1].for_s", "check"], lines
    assert all(line.startswith(f"k2bench: {mine}: ") for line in lines)
    e = error({"systems": ["k2"], "per_system": {"k2": {"workload": {"zipf": 0, "keys": "x"}}}})
    assert [x.field for x in e.errors] == ["per_system.k2.workload.keys", "per_system.k2.workload.zipf"]
    single = error({"workload": {"zipf": 0}})
    assert single.errors == [single] and "\n" not in str(single), "one problem: one error, as before"


def test_a_key_given_twice_names_the_file_line_and_key(tmp_path, capsys):
    """PyYAML keeps the last of two equal keys silently; experiment and topology files refuse them."""
    from k2bench import cli

    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: default\nworkload:\n  zipf: 1.4\nworkload:\n  keys: 10\n")
    assert cli.main(["validate", str(mine)]) == 2
    assert capsys.readouterr().err == (f"k2bench: {mine}:4: workload: given twice (first at line 2); YAML would keep "
                                       "only the last: give it once\n")
    base = tmp_path / "base.yaml"  # in a file it extends, a nested key: that file, the key's path
    base.write_text("extends: default\nfaults:\n  - {kind: kill, dc: VA, at_s: 1, at_s: 2}\n")
    mine.write_text("extends: base\n")
    with pytest.raises(ConfigError) as e:
        experiment.load_file(mine)
    assert str(e.value) == f"{base}:3: faults[0].at_s: given twice (first at line 3); YAML would keep only the last: " \
                           "give it once"
    topology = tmp_path / "topology.yaml"
    topology.write_text((WORKLOADS / "topologies" / "paper-local.yaml").read_text() + "servers_per_dc: 1\n")
    mine.write_text(yaml.safe_dump({"extends": "default", "topology": {"file": str(topology)}}))
    assert cli.main(["validate", str(mine)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"k2bench: {mine}: topology.file: {topology}:") and ": servers_per_dc: given twice" in err


def test_unknown_experiment_lists_the_known_ones():
    with pytest.raises(ConfigError) as e:
        experiment.find(WORKLOADS, "nosuch")
    assert e.value.field == "EXPERIMENT" and "default" in str(e.value) and "smoke" in str(e.value)


# ------------------------------------------------------------------ pacing YCSB can keep

def ycsb_thread_survives(target: int, threads: int) -> bool:
    """YCSB 0.17's own arithmetic (Client.main, ClientThread): -target is an int, a thread's
    rate target / threads; at 1 op/ms or less it draws nextInt((int) tick_ns), which throws
    for a tick that overflows an int."""
    per_ms = target / threads / 1000.0
    if target <= 0 or per_ms > 1.0:
        return target > 0
    tick = int(1_000_000 / per_ms)  # d2l
    as_int = (tick + 2**31) % 2**32 - 2**31  # l2i
    return as_int > 0 and tick <= 2**31 - 1  # below the floor we reject even what survives


def fixes(message: str) -> tuple[int | None, int]:
    import re
    fewer = re.search(r"use at most (\d+) clients.threads_per_dc", message)
    least = re.search(r"at least (\d+)(?: for|$)", message)
    return (int(fewer.group(1)) if fewer else None), int(least.group(1))


def test_the_split_over_client_processes_is_what_ycsb_gets():
    assert experiment.client_shares(20, 10.0, 3) == [experiment.ClientShare(7, 3), experiment.ClientShare(7, 3),
                                                     experiment.ClientShare(6, 3)]
    assert experiment.client_shares(33, 15.4, 1) == [experiment.ClientShare(33, 15)], "-target is an int"
    assert experiment.client_shares(2, 10.0, 3) == [experiment.ClientShare(1, 3)] * 3, "at least a thread each"
    assert experiment.client_shares(8, None, 2) == [experiment.ClientShare(4, None)] * 2
    assert experiment.ClientShare(2, 10).interval_ms == 200.0


def test_the_pacing_interval_is_the_slowest_threads():
    exp = resolve({"clients": {"threads_per_dc": 20, "target_ops_per_s_per_dc": 10}})
    assert experiment.pacing_interval_ms(exp, {"VA": 1}) == 2000.0
    assert experiment.pacing_interval_ms(exp, {"VA": 1, "CA": 3}) == pytest.approx(7000 / 3), "7 threads at 3/s"
    assert experiment.pacing_interval_ms(resolve({}), {"VA": 1}) is None, "closed loop"


def test_pacing_is_checked_after_ycsb_rounds_the_target():
    """15.4 ops/s over 33 threads is 0.467 per thread, but YCSB gets -target 15: 0.455."""
    e = error({"clients": {"threads_per_dc": 33, "target_ops_per_s_per_dc": 15.4}})
    assert e.field == "clients.target_ops_per_s_per_dc"
    assert "-target 15 -threads 33" in str(e) and "0.455 ops/s per thread" in str(e)
    fewer, least = fixes(str(e))
    assert (fewer, least) == (32, 16)
    resolve({"clients": {"threads_per_dc": fewer, "target_ops_per_s_per_dc": 15.4}})
    resolve({"clients": {"threads_per_dc": 33, "target_ops_per_s_per_dc": least}})
    resolve({"clients": {"threads_per_dc": 32, "target_ops_per_s_per_dc": 15.4}})


def test_pacing_is_checked_for_every_client_process_of_a_datacenter():
    """10 ops/s over 20 threads passes on one host (0.5 per thread) but not over 3 client
    hosts: -target 3 3 3, -threads 7 7 6, 0.43 per thread. The orchestrator checks with the
    deployment's client processes; the suggested fixes pass that check."""
    exp = resolve({"clients": {"threads_per_dc": 20, "target_ops_per_s_per_dc": 10}})
    experiment.check_pacing(exp, exp, {"VA": 1, "CA": 1})
    with pytest.raises(ConfigError) as e:
        experiment.check_pacing(exp, exp, {"VA": 1, "CA": 3})
    assert e.value.field == "clients.target_ops_per_s_per_dc" and "\n" not in str(e.value)
    assert "CA's 3 client processes with -target 3/3/3 -threads 7/7/6: 0.429 ops/s per thread" in str(e.value)
    fewer, least = fixes(str(e.value))
    for threads, target in ((fewer, 10), (20, least)):
        ok = resolve({"clients": {"threads_per_dc": threads, "target_ops_per_s_per_dc": target}})
        experiment.check_pacing(ok, ok, {"VA": 1, "CA": 3})
    bad = resolve({"clients": {"threads_per_dc": fewer + 1, "target_ops_per_s_per_dc": 10}})
    with pytest.raises(ConfigError):
        experiment.check_pacing(bad, bad, {"CA": 3}), "the suggestion is the most threads that pass"


def test_a_target_too_low_for_even_one_thread_asks_for_a_higher_target():
    e = error({"clients": {"threads_per_dc": 4, "target_ops_per_s_per_dc": 0.3}})
    assert "at most" not in str(e)
    assert "clients.target_ops_per_s_per_dc must be at least 0.47 x threads: at least 2 for 4" in str(e)
    resolve({"clients": {"threads_per_dc": 4, "target_ops_per_s_per_dc": 2}})


def test_a_failing_sweep_point_is_named_with_its_value():
    e = error({"clients": {"threads_per_dc": 8, "target_ops_per_s_per_dc": 20},
               "sweep": {"clients.threads_per_dc": [8, 48]}})
    assert e.field == "sweep.clients.threads_per_dc=48"
    e = error({"clients": {"threads_per_dc": 32}, "sweep": {"clients.target_ops_per_s_per_dc": [20, 10]}})
    assert e.field == "sweep.clients.target_ops_per_s_per_dc=10" and "use at most 21 clients.threads_per_dc" in str(e)
    e = error({"clients": {"threads_per_dc": 32, "target_ops_per_s_per_dc": 10}, "sweep": {"workload.zipf": [1.2]}})
    assert e.field == "clients.target_ops_per_s_per_dc", "a point that fails for unswept fields names them"


def _pacing(threads, target):
    return {"clients": {"threads_per_dc": threads, "target_ops_per_s_per_dc": target}, "sweep": {}}


@pytest.mark.parametrize("processes", [1, 2, 3, 8])
def test_the_check_accepts_exactly_what_ycsb_paces_and_its_fixes_pass(processes):
    """Over a grid of threads, targets and client processes: the check passes exactly where
    YCSB's own arithmetic on the launched split neither overflows nor goes below the
    floor, and whatever it suggests passes."""
    for threads in range(1, 41):
        for target in (0.4, 1, 2.5, 3, 5, 7.5, 10, 12, 15.4, 19, 20):
            cfg = _pacing(threads, target)
            ycsb_ok = all(ycsb_thread_survives(s.target, s.threads)
                          for s in experiment.client_shares(threads, target, processes))
            try:
                experiment.check_pacing(cfg, cfg, {"DC": processes})
                passed = True
            except ConfigError as e:
                passed = False
                fewer, least = fixes(str(e))
                for c in ([_pacing(fewer, target)] if fewer else []) + [_pacing(threads, least)]:
                    experiment.check_pacing(c, c, {"DC": processes})
            assert passed == ycsb_ok, (threads, target, processes)


def test_a_missing_jar_is_named_before_anything_asks_it(tmp_path, capsys):
    from k2bench import cli

    missing = tmp_path / "k2bench.jar"
    assert cli.main(["--jar", str(missing), "run", "smoke", "--runs", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"k2bench: jar: {missing} is missing; run `make build`"


def test_validate_without_the_jar_runs_every_check_that_does_not_need_it(tmp_path, capsys):
    from k2bench import cli

    missing = tmp_path / "k2bench.jar"
    skipped = (f"k2bench: jar: {missing} is missing, so these checks were skipped: system names, options and "
               "mutants, the systems' claims (placements, transactions, message loss, caches), the launcher's "
               "topology check; run `make build` for them\n")
    assert cli.main(["--jar", str(missing), "validate", "smoke", "faults"]) == 0
    out = capsys.readouterr()
    assert out.out == "smoke: ok (3 system run(s))\nfaults: ok (3 system run(s))\n" and out.err == skipped
    mine = tmp_path / "mine.yaml"
    for doc, problem in (({"faults": [{"kind": "kill", "dc": "VAA", "at_s": 1}]}, "faults[0].dc: unknown datacenter"),
                         ({"clients": {"threads_per_dc": 33, "target_ops_per_s_per_dc": 15.4}},
                          "clients.target_ops_per_s_per_dc: "),
                         ({"workload": {"zipf": 0}}, "workload.zipf: must be > 0"),
                         ({"topology": {"file": "nosuch.yaml"}}, "topology.file: ")):
        mine.write_text(yaml.safe_dump({"extends": "smoke", **doc}))
        assert cli.main(["--jar", str(missing), "validate", str(mine)]) == 2
        assert capsys.readouterr().err.startswith(f"k2bench: {mine}: {problem}"), doc
    mine.write_text(yaml.safe_dump({"workload": {"zipf": 1.4}}))  # the default systems are the jar's
    assert cli.main(["--jar", str(missing), "validate", str(mine)]) == 2
    assert capsys.readouterr().err == (f"k2bench: {mine}: systems: not given, and the default systems come from the "
                                       "jar, which is not built: name the systems, or run `make build`\n")


def test_only_errors_about_the_experiments_fields_name_its_file():
    from k2bench import cli

    for field in ("workload.zipf", "sweep.workload.zipf[1]", "sweep.clients.threads_per_dc=48", "systems[1]",
                  "topology topologies/paper-local.yaml (datacenters)", "faults[0].dc"):
        assert cli.common._experiment_field(field), field
    for field in ("inventory.datacenters", "--systems", "jar", "--resume", "EXPERIMENT"):
        assert not cli.common._experiment_field(field), field


def test_system_options_are_a_mapping_per_system():
    exp = resolve({"server": {"options": {"paris-star": {"private_cache_ttl_ms": 100}}}})
    assert exp["server"]["options"] == {"paris-star": {"private_cache_ttl_ms": 100}}
    assert resolve({})["server"]["options"] == {}
    assert error({"server": {"options": ["x"]}}).field == "server.options"
    assert error({"server": {"options": {"k2": 5}}}).field == "server.options.k2"
    e = error({"server": {"options": {"k2": {"x": [1]}}}})
    assert e.field == "server.options.k2.x" and "a number, true/false or a name" in str(e)
    # a name is a choice's value; which names an option takes is the system's (check_system_options)
    assert resolve({"server": {"options": {"bpr": {"blocking": "queue"}}}})["server"]["options"] == {
        "bpr": {"blocking": "queue"}}


# ------------------------------------------------------------------ key distribution

SCRAMBLED = {"workload": {"key_distribution": "ycsb_scrambled", "zipf": 0.99}}


def test_key_distribution_defaults_to_the_exact_zipf_and_sweeps():
    assert resolve({})["workload"]["key_distribution"] == "zipf"
    assert resolve(SCRAMBLED)["workload"]["key_distribution"] == "ycsb_scrambled"
    e = error({"workload": {"key_distribution": "ycsb"}})
    assert str(e) == "workload.key_distribution: must be zipf or ycsb_scrambled, got 'ycsb'"
    exp = resolve({"workload": {"zipf": 0.99}, "sweep": {"workload.key_distribution": ["zipf", "ycsb_scrambled"]}})
    by = dict(experiment.points(exp))
    assert sorted(by) == ["key_distribution=ycsb_scrambled", "key_distribution=zipf"]
    assert by["key_distribution=ycsb_scrambled"]["workload"]["key_distribution"] == "ycsb_scrambled"
    e = error({"sweep": {"workload.key_distribution": ["zipf", "ycsb"]}})
    assert e.field == "sweep.workload.key_distribution[1]"


def test_ycsb_scrambled_needs_its_constant_and_refuses_what_it_cannot_serve():
    def refused(doc) -> str:
        return str(error({**doc, "workload": {**SCRAMBLED["workload"], **doc.get("workload", {})}}))

    assert refused({"workload": {"zipf": 1.2}}) == (
        "workload.key_distribution: ycsb_scrambled is YCSB's generator at its constant 0.99; set workload.zipf: 0.99 "
        "or use key_distribution: zipf")
    assert refused({"workload": {"locality": 0.5}}) == (
        "workload.key_distribution: ycsb_scrambled has no per-datacenter hot sets; set workload.locality: 0 "
        "or use key_distribution: zipf")
    assert refused({"workload": {"partitions_per_op": 2}}) == (
        "workload.key_distribution: ycsb_scrambled draws over the whole key space, not the PaRiS key choice; "
        "set workload.partitions_per_op: 0 or use key_distribution: zipf")
    assert refused({"topology": {"place": "ba"}}) == (
        "workload.key_distribution: topology.place's expected demand models the exact Zipf, not ycsb_scrambled; "
        "give topology.place_demand a parquet of k2bench demand, set topology.place: none or use "
        "key_distribution: zipf")
    resolve({**SCRAMBLED, "topology": {"place": "ba", "place_demand": "demand.parquet"}})  # a measured demand
    # the point and the system that fail are named
    e = error({"sweep": {"workload.key_distribution": ["zipf", "ycsb_scrambled"]}})
    assert e.field == "sweep.workload.key_distribution=ycsb_scrambled" and "set workload.zipf: 0.99" in e.problem
    e = error({**SCRAMBLED, "sweep": {"workload.locality": [0.0, 0.8]}})
    assert e.field == "sweep.workload.locality=0.8"
    e = error({"systems": ["k2", "karma"],
               "per_system": {"karma": {"workload": {"key_distribution": "ycsb_scrambled"}}}})
    assert e.field == "per_system.karma.workload.key_distribution"
    resolve({"systems": ["k2", "karma"], "per_system": {"karma": SCRAMBLED}})


def test_a_refused_key_distribution_is_one_line_on_the_command_line(tmp_path, capsys):
    from k2bench import cli

    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"extends": "default", "workload": {"key_distribution": "ycsb_scrambled"}}))
    assert cli.main(["validate", str(mine)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"k2bench: {mine}: workload.key_distribution: ycsb_scrambled is YCSB's generator at its constant 0.99; "
        "set workload.zipf: 0.99 or use key_distribution: zipf")


def test_the_clients_get_the_key_distribution_in_the_trials_spec(tmp_path):
    from k2bench.deploy.hosts import LocalHost
    from k2bench.spec.trial import TrialSpec
    from k2bench.trial import Trial
    from k2bench.trial.jvm import client_props

    jar = tmp_path / "k2bench.jar"  # not run: the properties are only written
    host = LocalHost(jar)
    host.run_dir = tmp_path
    for doc, want in (({}, "zipf"), (SCRAMBLED, "ycsb_scrambled")):
        exp = resolve(doc)
        props = client_props(Trial("k2", "", 1, exp, tmp_path / "k2", "k2"), host, "VA", 5000, None)
        # the workload is the trial's spec's, on the client's host; the properties are the process's own
        assert props["k2bench.spec"] == str(tmp_path / "k2" / "spec.json")
        assert not [k for k in props if k in ("recordcount", "k2bench.zipf", "k2bench.key_distribution")]
        spec = TrialSpec.of(exp, "k2", "", {}, 1, 1).to_json()
        assert spec["workload"]["key_distribution"] == want and spec["workload"]["zipf"] == exp["workload"]["zipf"]
