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
    assert "\n" not in str(e.value)
    return e.value


@pytest.mark.parametrize("path", sorted(WORKLOADS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_experiment_resolves(path):
    exp = experiment.resolve(experiment.load_file(path), path.stem, SYSTEMS)
    assert exp["name"] == path.stem
    d = exp["duration"]
    assert d["warmup_s"] > 0 and d["cooldown_s"] > 0, "warm-up and cool-down are explicit and trimmed"
    assert experiment.points(exp)


def test_defaults_are_the_papers():
    exp = resolve({})
    w = exp["workload"]
    assert (w["keys"], w["keys_per_op"], w["columns"], w["value_bytes"]) == (1_000_000, 5, 5, 128)
    assert (w["zipf"], w["write_fraction"], w["wot_fraction"]) == (1.2, 0.01, 0.5)
    assert exp["server"]["cache_fraction"] == 0.05
    assert exp["systems"] == ["k2", "rad", "paris-star"]
    assert exp["duration"]["warmup_s"] == 540 and exp["duration"]["cooldown_s"] == 20


def test_unknown_fields_are_named():
    assert error({"workload": {"zipff": 1.2}}).field == "workload.zipff"
    assert error({"workloads": {}}).field == "workloads"


def test_wrong_types_and_ranges_are_named():
    assert error({"workload": {"keys": "many"}}).field == "workload.keys"
    assert error({"workload": {"write_fraction": 1.5}}).field == "workload.write_fraction"
    assert error({"workload": {"zipf": 0}}).field == "workload.zipf"
    assert error({"clients": {"threads_per_dc": 0}}).field == "clients.threads_per_dc"
    assert error({"trials": 0}).field == "trials"
    assert error({"workload": {"keys": 3, "keys_per_op": 5}}).field == "workload.keys_per_op"


def test_jvm_args_are_options_before_the_jar():
    exp = resolve({"clients": {"jvm_args": ["-XX:+UseZGC", "-Dx=1"]}})
    assert exp["server"]["jvm_args"] == list(experiment.DEFAULT_JVM_ARGS)
    assert exp["clients"]["jvm_args"] == ["-XX:+UseZGC", "-Dx=1"]
    assert resolve({"server": {"jvm_args": []}})["server"]["jvm_args"] == []
    assert error({"server": {"jvm_args": "-XX:+UseZGC"}}).field == "server.jvm_args"
    assert error({"server": {"jvm_args": ["XX:+UseZGC"]}}).field == "server.jvm_args"
    assert "heap_mb" in str(error({"clients": {"jvm_args": ["-Xmx4g"]}}))

    from k2bench.hosts import LocalHost
    from k2bench.orchestrator import java
    argv = java(LocalHost(ROOT / "k2bench.jar"), 256, "serve", props={"a": "b"},
                jvm_args=exp["clients"]["jvm_args"])
    assert argv[:argv.index("-jar")] == ["java", "-XX:+UseZGC", "-Dx=1", "-Xmx256m", "-Da=b"]
    assert argv[argv.index("-jar") + 2:] == ["serve"]


def test_unknown_system_lists_the_known_ones():
    e = error({"systems": ["k2", "k3"]})
    assert e.field == "systems[1]" and "k2, paris-star, rad" in str(e)


def test_distributions_must_sum_to_one():
    ok = resolve({"workload": {"keys_per_op": {1: 0.5, 2: 0.5}}})
    assert ok["workload"]["keys_per_op"] == {1: 0.5, 2: 0.5}
    assert experiment.dist_text(ok["workload"]["keys_per_op"]) == "1:0.5,2:0.5"
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
    assert error({"sweep": {"workload.zipf": [0.9, -1]}}).field == "workload.zipf"


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


def test_unknown_experiment_lists_the_known_ones():
    with pytest.raises(ConfigError) as e:
        experiment.find(WORKLOADS, "nosuch")
    assert e.value.field == "EXPERIMENT" and "default" in str(e.value) and "smoke" in str(e.value)
