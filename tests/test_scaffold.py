"""`make new-system` (k2bench/scaffold.py) on a copy of system/: the module it writes, its
edits of the two poms (lines added, nothing else changed), and its refusals, each of which
leaves the tree as it was. No Maven here: tests/test_scaffold_e2e.py builds and runs one."""
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT
from k2bench import scaffold

POM = "{http://maven.apache.org/POM/4.0.0}"


@pytest.fixture
def root(tmp_path):
    """A checkout as far as the scaffold reads one: system/ without build output."""
    shutil.copytree(ROOT / "system", tmp_path / "system", ignore=shutil.ignore_patterns("target"))
    (tmp_path / "system" / "scratch").mkdir()  # a directory that is no module
    return tmp_path


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def scaffold_main(root, name, capsys):
    rc = scaffold.main(["--root", str(root), "--", name])  # "--": a name may start with a dash
    out, err = capsys.readouterr()
    return rc, out, err


def only_added(before: str, after: str, *blocks: str) -> None:
    """``after`` is ``before`` with these blocks of lines added, each once, and nothing else."""
    for block in blocks:
        assert after.count(block) == 1, block
        after = after.replace(block, "")
    assert after == before


def test_the_names_it_derives():
    assert scaffold.class_prefix("my-sys") == "MySys"
    assert scaffold.class_prefix("k3") == "K3"
    assert scaffold.class_prefix("a-2b-c") == "A2bC"
    assert scaffold.ROOT == ROOT, "by default it writes into the checkout it belongs to"


@pytest.mark.parametrize("name, says", [
    ("My-Sys", "use lower-case letters"),
    ("my_sys", "use lower-case letters"),
    ("my--sys", "use lower-case letters"),
    ("-sys", "use lower-case letters"),
    ("sys-", "use lower-case letters"),
    ("2pc", "use lower-case letters"),
    ("", "use lower-case letters"),
    ("my-sys\n", "use lower-case letters"),
    ("rad", "already a system (org.k2bench.rad.RadSystem in system/rad)"),
    ("paris-star", "already a system"),
    ("nocc", "already a system (org.k2bench.paris.NoccSystem in system/paris)"),  # no module of its own
    ("cops-pr", "already a system (org.k2bench.karma.CopsPrSystem in system/karma)"),
    ("ycsb", "system/ycsb exists"),
    ("scratch", "system/scratch exists"),
    ("parisstar", "Java package org.k2bench.parisstar"),  # paris-star's package
    ("class", "a reserved word"),
])
def test_a_bad_or_taken_name_is_refused_in_one_line_and_nothing_is_written(root, capsys, name, says):
    before = snapshot(root)
    rc, out, err = scaffold_main(root, name, capsys)
    assert rc == 2 and out == ""
    [line] = err.splitlines()
    assert line.startswith(f"new-system: {name!r} ") and says in line, line
    assert "choose another name" in line or "e.g. my-sys" in line, "the line says what to do"
    assert snapshot(root) == before


def test_it_writes_the_module_and_registers_it_in_both_poms(root, capsys):
    parent, launcher = root / "system" / "pom.xml", root / "system" / "launcher" / "pom.xml"
    parent_before, launcher_before = parent.read_text(), launcher.read_text()
    rc, out, err = scaffold_main(root, "my-sys", capsys)
    assert rc == 0 and err == "", err
    module = root / "system" / "my-sys"
    written = sorted(str(p.relative_to(module)) for p in module.rglob("*") if p.is_file())
    assert written == ["pom.xml", "src/main/java/org/k2bench/mysys/MySysSystem.java",
                       "src/main/resources/META-INF/services/org.k2bench.core.api.StoreSystem",
                       "src/test/java/org/k2bench/mysys/MySysContractTest.java"]
    for f in written + ["system/pom.xml", "system/launcher/pom.xml"]:
        assert f in out, f"{f}: printed as written"
    assert "make build" in out and "k2bench systems" in out and "systems: [my-sys]" in out

    services = module / "src/main/resources/META-INF/services/org.k2bench.core.api.StoreSystem"
    assert services.read_text() == "org.k2bench.mysys.MySysSystem\n"
    java = (module / "src/main/java/org/k2bench/mysys/MySysSystem.java").read_text()
    assert java.startswith("package org.k2bench.mysys;\n")
    for fragment in ("public final class MySysSystem implements StoreSystem", 'return "my-sys";', "return 100;",
                     "return null;", "new RadSystem()", "protocol.startServer(", "protocol.newClient(",
                     "protocol.maxWanRounds()", "docs/adding-a-system.md §3-4"):
        assert fragment in java, fragment
    assert "{{" not in java and "{#" not in java, "every placeholder rendered"
    test = (module / "src/test/java/org/k2bench/mysys/MySysContractTest.java").read_text()
    assert "class MySysContractTest extends TransactionContractTest" in test and "new MySysSystem()" in test

    pom = ET.parse(module / "pom.xml").getroot()
    assert pom.findtext(f"{POM}artifactId") == "k2bench-my-sys"
    assert pom.findtext(f"{POM}parent/{POM}version") == ET.parse(parent).getroot().findtext(f"{POM}version")
    deps = [(d.findtext(f"{POM}artifactId"), d.findtext(f"{POM}type"), d.findtext(f"{POM}scope"))
            for d in pom.iter(f"{POM}dependency")]
    assert deps == [("k2bench-core", None, None), ("k2bench-rad", None, None), ("k2bench-core", "test-jar", "test"),
                    ("slf4j-simple", None, "test")]
    assert pom.find(f"{POM}build") is None, "no protobuf plugin: the module has no .proto"

    only_added(parent_before, parent.read_text(), "    <module>my-sys</module>\n",
               "      <dependency>\n        <groupId>org.k2bench</groupId>\n        <artifactId>k2bench-my-sys"
               "</artifactId>\n        <version>${project.version}</version>\n      </dependency>\n")
    modules = [m.text for m in ET.parse(parent).getroot().find(f"{POM}modules")]
    assert modules[modules.index("my-sys") + 1] == "ycsb", "built before the YCSB binding and the launcher"
    managed = ET.parse(parent).getroot().find(f"{POM}dependencyManagement")
    assert "k2bench-my-sys" in [d.findtext(f"{POM}artifactId") for d in managed.iter(f"{POM}dependency")]
    only_added(launcher_before, launcher.read_text(), "    <dependency><groupId>org.k2bench</groupId>"
               "<artifactId>k2bench-my-sys</artifactId><scope>runtime</scope></dependency>\n")
    assert not [p for p in (root / "system").iterdir() if p.name.startswith((".my-sys", "pom.xml."))], "no leftovers"


def test_generating_the_same_system_twice_is_refused(root, capsys):
    assert scaffold_main(root, "my-sys", capsys)[0] == 0
    before = snapshot(root)
    rc, _, err = scaffold_main(root, "my-sys", capsys)
    assert rc == 2 and "'my-sys' is already a system (org.k2bench.mysys.MySysSystem in system/my-sys)" in err
    assert snapshot(root) == before
    assert scaffold_main(root, "my-sys-two", capsys)[0] == 0, "a second system goes after the first"
    text = (root / "system" / "pom.xml").read_text()
    assert text.index("<module>my-sys</module>") < text.index("<module>my-sys-two</module>") < text.index(
        "<module>ycsb</module>")


@pytest.mark.parametrize("pom, anchor, says", [
    ("system/pom.xml", "    <module>ycsb</module>\n", "<module>ycsb</module> line"),
    ("system/launcher/pom.xml", "<scope>runtime</scope>", "runtime dependency on a bundled system"),
])
def test_a_pom_without_its_anchor_is_refused_before_anything_is_written(root, capsys, pom, anchor, says):
    f = root / pom
    f.write_text(f.read_text().replace(anchor, ""))
    before = snapshot(root)
    rc, _, err = scaffold_main(root, "my-sys", capsys)
    assert rc == 2 and says in err and "add it by hand" in err, err
    assert snapshot(root) == before


def test_a_failure_while_writing_puts_everything_back(root, capsys, monkeypatch):
    before = snapshot(root)
    replaced = []

    def replace_then_fail(src, dst):
        if replaced:  # the second pom: the module and the first pom are in place by now
            raise OSError("disk full")
        replaced.append(dst)
        src.rename(dst)

    monkeypatch.setattr(scaffold.os, "replace", replace_then_fail)
    with pytest.raises(OSError, match="disk full"):
        scaffold.main(["my-sys", "--root", str(root)])
    assert replaced and snapshot(root) == before


def test_the_module_runs_as_a_command(root):
    r = subprocess.run([sys.executable, "-m", "k2bench.scaffold", "Bad", "--root", str(root)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("new-system: 'Bad' is not a system name"), r.stderr


def test_make_new_system_without_a_name_says_how_to_give_one(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "system").mkdir()  # the Makefile lists the Java sources when it is read
    r = subprocess.run(["make", "--no-print-directory", "new-system"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines()[0] == "make new-system: give the system's name, e.g. make new-system NAME=my-sys"
    assert not (tmp_path / ".venv").exists(), "checked before anything is installed"
