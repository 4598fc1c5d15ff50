"""The systems' descriptors (k2bench/systems.py): what Python knows of a system comes from
its module's StoreSystem, through `systems --json`, with defaults for an older jar."""
import json

from conftest import SYSTEMS
from k2bench.systems import DEFAULT_COLOURS, SystemInfo, Systems, of_run


def test_an_older_descriptor_gets_the_interfaces_defaults():
    s = SystemInfo.from_json({"name": "x", "description": "d", "max_wan_rounds": 2, "unknown_key": 1})
    assert (s.label, s.shown, s.colour, s.run_by_default, s.dc_cache, s.causal, s.message_loss) == \
        ("", "x", None, False, False, True, True)
    assert s.placements == ("groups",) and s.mutants == {}


def test_order_labels_and_colours_come_from_the_descriptors_with_defaults_for_the_rest():
    known = Systems([SystemInfo("b", label="B", order=2, colour="#000001", run_by_default=True),
                     SystemInfo("a", label="A", order=1, mutants={"m": "broken"}, dc_cache=True),
                     SystemInfo("c", order=2)])
    assert list(known) == ["a", "b", "c"] and known.defaults() == ["b"]
    assert known.label("b") == "B" and known.label("c") == "c" and known.label("new") == "new"
    assert known.colour("b") == "#000001"
    assert known.colour("a") in DEFAULT_COLOURS and known.colour("a") != known.colour("c")
    assert known.colour("new") in DEFAULT_COLOURS  # a system this jar lacks is still drawn
    assert known.palette(["a", "new"]) == {"A": known.colour("a"), "new": known.colour("new")}
    assert known.ordered(["new", "c", "a"]) == ["a", "c", "new"]
    assert known.by_label(["zz", "B", "A"]) == ["A", "B", "zz"]
    assert known.where(dc_cache=True) == ["a"] and known.mutants() == {"m": ["a"]}
    again = Systems.from_json(json.loads(json.dumps(known.to_json())))
    assert again.to_json() == known.to_json()


def test_a_run_is_read_with_its_own_descriptors(tmp_path):
    mine = SystemInfo("k2", label="K2 as it was run", colour="#123456")
    (tmp_path / "manifest.json").write_text(json.dumps({"systems_info": [mine.to_json()]}))
    assert of_run(tmp_path).label("k2") == "K2 as it was run"
    assert of_run(tmp_path / "nowhere").label("k2") == SYSTEMS.label("k2")  # the jar's, without a manifest


def test_the_jar_describes_every_system_fully():
    infos = list(SYSTEMS.values())
    assert len(infos) >= 8
    labels = [s.shown for s in infos]
    assert len(set(labels)) == len(labels), labels
    colours = [s.colour for s in infos if s.colour]
    assert len(set(colours)) == len(colours) == len(infos), "every bundled system has a colour of its own"
    assert [s.name for s in infos if not s.causal] == ["nocc"]  # the PaRiS paper's negative control
    assert SYSTEMS.where(dc_cache=True) == ["k2"]
    assert set(SYSTEMS.defaults()) == {"k2", "rad", "paris-star"}
    assert {s.paper for s in infos} == {"k2", "paris", "karma"}
    assert all(SYSTEMS.mutants()), "every mutant is honoured by some system"


def test_every_system_a_papers_claims_name_is_bundled_in_that_papers_evaluation():
    from analysis import claims, paper
    casts = [paper.Cast.load(f.name) for f in sorted(paper.PAPERS_DIR.glob("*.yaml"))]
    described = {s.paper for s in SYSTEMS.values()}
    assert described <= {c.paper for c in casts}, "a cast per bundled paper"
    for cast in casts:
        # a paper with no system of its own (replica placement) casts any bundled system
        own = SYSTEMS.of_paper(cast.paper) if cast.paper in described else [s.name for s in SYSTEMS.values()]
        assert set(cast.systems.values()) <= set(own), cast.paper
        assert cast.title and set(cast.reproduce) == {"quick", "full"}, cast.paper
        assert set(cast.fig9_ktxn_per_s) <= set(cast.systems.values()), cast.paper
    assert (claims.K2, claims.RAD, claims.PARIS_STAR) == ("k2", "rad", "paris-star")
    assert (claims.PARIS, claims.BPR, claims.NOCC) == ("paris", "bpr", "nocc")
    for claim, *_ in claims.CLAIMS:
        assert set(claim.systems) <= set(SYSTEMS.of_paper("k2")), claim.what
    for claim, *_ in claims.PARIS_CLAIMS:
        assert set(claim.systems) <= set(SYSTEMS.of_paper("paris")), claim.what
    assert set(paper.FIG9_KTXN_PER_S) == {"k2", "rad"}


def test_systems_without_a_colour_each_get_a_colour_of_their_own():
    known = Systems([SystemInfo("a", colour=DEFAULT_COLOURS[0])])
    names = ["k2", "paris-star", "rad", "nocc", "x", "y", "z", "w"]
    colours = [known.colour(n) for n in names]
    assert len(set(colours)) == len(names) and DEFAULT_COLOURS[0] not in colours
    assert [known.colour(n) for n in names] == colours, "a system keeps its colour"


def test_a_run_without_descriptors_and_no_jar_is_read_with_a_warning(tmp_path, monkeypatch, capsys):
    import shutil

    from analysis import load
    from conftest import ROOT
    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "fixtures" / "run-analysis", run)
    monkeypatch.setattr(load, "_SYSTEMS", Systems())  # as without a built jar
    load.load_run(run)
    err = capsys.readouterr().err
    assert "nothing describes" in err and "make build" in err
    assert load.systems().label("k2") == "k2"  # named by its name, still drawn
