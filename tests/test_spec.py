"""The run spec: every parameter defined once (k2bench/spec/schema.py) and one trial's
resolved spec.json (k2bench/spec/trial.py), the contract with the systems' processes."""
import dataclasses
import json

import pytest

from conftest import ROOT, SYSTEMS
from k2bench import experiment
from k2bench.spec import schema
from k2bench.spec.trial import SPEC_VERSION, TrialSpec

FIXTURE = ROOT / "tests" / "fixtures" / "spec" / "default-k2.json"


def test_every_parameter_has_one_definition_with_its_meaning_and_a_default_its_check_passes():
    for section, cls in schema.SECTIONS.items():
        for f in dataclasses.fields(cls):
            m = f.metadata
            assert m["doc"], f"{section}.{f.name} says what it means"
            if m["check"] is not None and m["default"] is not None:
                assert m["check"](m["default"]) is None, f"{section}.{f.name}'s default fails its own check"
    assert schema.table() == experiment.SCHEMA, "resolution uses the schema's one table"


def test_an_empty_experiment_resolves_to_the_schemas_defaults():
    exp = experiment.resolve({}, "x", SYSTEMS)
    for section, cls in schema.SECTIONS.items():
        assert exp[section] == dataclasses.asdict(cls()), section


def test_a_trials_spec_is_the_point_as_its_system_runs_it():
    exp = experiment.resolve({"systems": ["k2", "rad"], "sweep": {"workload.zipf": [0.9, 1.4]},
                              "server": {"options": {"k2": {}, "paris-star": {"private_cache_ttl_ms": 100}}},
                              "per_system": {"rad": {"clients": {"threads_per_dc": 3}}},
                              "faults": [{"kind": "pause", "dc": "CA", "at_s": 5, "for_s": 1}],
                              "testing": {"mutant": "read-pending"}}, "x", SYSTEMS)
    by = {(pid, s): cfg for pid, s, cfg in experiment.system_points(exp)}
    rad = TrialSpec.of(by["zipf=1.4", "rad"], "rad", "zipf=1.4", {"workload.zipf": 1.4}, 2, 1, "placement.csv")
    d = json.loads(rad.text())
    assert d["spec_version"] == SPEC_VERSION and d["experiment"]["point_values"] == {"workload.zipf": 1.4}
    assert d["workload"]["zipf"] == 1.4 and d["clients"]["threads_per_dc"] == 3
    assert d["system"] == {"name": "rad", "options": {}} and "options" not in d["server"]
    assert d["testing"] == {"mutant": "read-pending"} and d["faults"][0]["kind"] == "pause"
    assert d["files"] == {"topology": "topology.yaml", "placement_table": "placement.csv"}
    k2 = json.loads(TrialSpec.of(by["zipf=0.9", "k2"], "k2", "zipf=0.9", {}, 1, 1).text())
    assert k2["clients"]["threads_per_dc"] == 8 and k2["workload"]["zipf"] == 0.9
    with pytest.raises(dataclasses.FrozenInstanceError):
        rad.workload.zipf = 2.0  # resolved once, never changed


def test_the_fixture_the_java_side_reads_is_what_the_harness_writes():
    exp = experiment.resolve(experiment.load_file(ROOT / "workloads" / "default.yaml"), "default", SYSTEMS)
    [cfg] = [c for _, s, c in experiment.system_points(exp) if s == "k2"]
    assert TrialSpec.of(cfg, "k2", "", {}, 1, exp["trials"]).text() == FIXTURE.read_text(), \
        f"the spec changed: regenerate {FIXTURE.relative_to(ROOT)} and update the Java RunSpec with it"


def _documented(section: str) -> dict[str, str]:
    """field -> its default as docs/writing-an-experiment.md's table of the section gives it."""
    import re
    text = (ROOT / "docs" / "writing-an-experiment.md").read_text()
    m = re.search(rf"### `{section}`[^\n]*\n\n\| field \|[^\n]*\n\|[ -|]+\n((?:\|[^\n]*\n)+)", text)
    if m is None:  # load and duration share one table, their fields given as section.field
        m = re.search(r"### `load` and `duration`\n\n\| field \|[^\n]*\n\|[ -|]+\n((?:\|[^\n]*\n)+)", text)
    out = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cells[0].strip("`")
        if name.startswith(f"{section}."):
            name = name.split(".", 1)[1]
        elif "." in name:
            continue
        out[name] = cells[2]
    return out


def _as_value(text: str):
    import re
    v = text.strip()
    if v == "null" or v.startswith("the file's"):
        return None
    v = v.strip("`")
    if re.fullmatch(r"-?[\d,]+", v):
        return int(v.replace(",", ""))
    if v in ("true", "false"):
        return v == "true"
    try:
        return float(v)
    except ValueError:
        return v


@pytest.mark.parametrize("section", list(schema.SECTIONS))
def test_the_docs_list_every_parameter_with_the_schemas_default(section):
    documented = _documented(section)
    defaults = {name: d for name, (_, d, _) in schema.table()[section].items()}
    assert set(documented) == set(defaults), f"docs/writing-an-experiment.md's {section} table: " \
        f"missing {sorted(set(defaults) - set(documented))}, not in the schema {sorted(set(documented) - set(defaults))}"
    for name, d in defaults.items():
        shown = _as_value(documented[name])
        if isinstance(d, (list, dict)):
            assert str(shown).replace(" ", "") == json.dumps(d).replace(" ", "").replace('"', ""), (section, name)
        else:
            assert shown == d, f"{section}.{name}: the docs say {documented[name]}, the schema {d!r}"


@pytest.mark.parametrize("name", ["smoke", "tao", "partial-replication", "placement"])
def test_show_prints_the_resolved_experiment_which_resolves_to_itself(name, jar, tmp_path, capsys):
    import yaml

    from k2bench import cli
    assert cli.main(["--jar", str(jar), "show", name]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"# {name} as it runs (")
    shown = yaml.safe_load(text)
    exp = experiment.resolve(experiment.load_file(ROOT / "workloads" / f"{name}.yaml"), name, SYSTEMS)
    assert shown == exp, "extends and defaults applied"
    (tmp_path / "again.yaml").write_text(text)
    assert experiment.resolve(experiment.load_file(tmp_path / "again.yaml"), "again", SYSTEMS) == exp


def test_set_is_checked_as_the_files_fields_in_show_and_validate(jar, capsys):
    import yaml

    from k2bench import cli
    assert cli.main(["--jar", str(jar), "show", "smoke", "--set", "workload.zipf=1.4", "--set", "trials=2",
                     "--set", "per_system.rad.clients.threads_per_dc=2"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["workload"]["zipf"] == 1.4 and shown["trials"] == 2
    assert shown["per_system"] == {"rad": {"clients": {"threads_per_dc": 2}}}
    for flag, err in (("worklaod.zipf=1", "--set worklaod: unknown field (did you mean workload?); allowed: "),
                      ("workload.zipf=high", "--set workload.zipf: must be a number, got 'high'"),
                      ("workload.zipf", "--set: 'workload.zipf' is not FIELD=VALUE, e.g. --set workload.zipf=1.4"),
                      ("trials.x=1", "--set trials.x: trials is not a mapping of fields; set it whole"),
                      ("server.processes=per_dc", None)):
        for command in ("show", "validate"):
            code = cli.main(["--jar", str(jar), command, "smoke", "--set", flag])
            out = capsys.readouterr()
            assert code == (0 if err is None else 2) and (err is None or out.err.startswith(f"k2bench: {err}")), \
                (command, flag, out.err)
    assert cli.main(["--jar", str(jar), "validate", "smoke", "--set", "server.processes=per_dc",
                     "--set", "clients.processes=in_server"]) == 2, "and as run checks them before it starts"
    assert capsys.readouterr().err.startswith("k2bench: --set clients.processes: in_server needs a local run")
