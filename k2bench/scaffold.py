"""``make new-system NAME=<name>``: a new system's Maven module from the templates in
system/.template/, registered in system/pom.xml and system/launcher/pom.xml, since adding a
system is its module and nothing else (docs/adding-a-system.md). The generated system runs
an existing protocol by delegation (the template says which), so it builds, runs and passes
its contract test from the first build.

    python -m k2bench.scaffold NAME [--root DIR]

Everything is checked before anything is written; a refusal is one line on stderr, exit 2.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from . import systems

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
SERVICES = "META-INF/services/org.k2bench.core.api.StoreSystem"
# Template -> the file it renders, in the module ({path}: the package's directory).
FILES = {
    "pom.xml.j2": "pom.xml",
    "System.java.j2": "src/main/java/{path}/{cls}System.java",
    "StoreSystem.services.j2": "src/main/resources/" + SERVICES,
    "ContractTest.java.j2": "src/test/java/{path}/{cls}ContractTest.java",
}
# Java's reserved words: the name without dashes becomes a package name, which cannot be one.
JAVA_RESERVED = set("""abstract assert boolean break byte case catch char class const continue default do double
    else enum extends final finally float for goto if implements import instanceof int interface long native new
    package private protected public return short static strictfp super switch synchronized this throw throws
    transient try void volatile while true false null""".split())


class Refused(Exception):
    """Why nothing was written: one line that names the fix."""


def class_prefix(name: str) -> str:
    """``my-sys`` -> ``MySys``."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("-"))


def _system_name(cls: str) -> str:
    """The name a bundled class follows by convention: ``MySysSystem`` -> ``my-sys``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", cls.rsplit(".", 1)[-1].removesuffix("System")).lower()


def existing_systems(root: Path) -> dict[str, str]:
    """System name -> where it is: the classes the modules register (named by convention),
    and the built jar's descriptors when there is one (names that break the convention)."""
    out = {}
    for services in sorted((root / "system").glob("*/src/main/resources/" + SERVICES)):
        module = services.parents[5].relative_to(root)
        for line in services.read_text().splitlines():
            cls = line.split("#", 1)[0].strip()  # ServiceLoader's comments
            if cls:
                out[_system_name(cls)] = f"{cls} in {module}"
    jar = root / "system" / "launcher" / "target" / "k2bench.jar"
    return {**{n: str(jar.relative_to(root)) for n in systems.local(jar)}, **out}


def check_name(root: Path, name: str) -> None:
    if not NAME.fullmatch(name):
        raise Refused(f"{name!r} is not a system name: use lower-case letters and digits, starting with a "
                      "letter, words joined by single dashes (e.g. my-sys)")
    package = name.replace("-", "")
    if package in JAVA_RESERVED:
        raise Refused(f"{name!r} would make the Java package org.k2bench.{package}, a reserved word: "
                      "choose another name")
    known = existing_systems(root)
    if name in known:
        raise Refused(f"{name!r} is already a system ({known[name]}): choose another name")
    if (root / "system" / name).exists():
        raise Refused(f"{name!r} is taken: system/{name} exists; choose another name")
    taken = [p.relative_to(root) for p in (root / "system").glob(f"*/src/*/java/org/k2bench/{package}")]
    if taken:
        raise Refused(f"{name!r} would use the Java package org.k2bench.{package}, which {taken[0]} has: "
                      "choose another name")


def _insert(where: str, text: str, anchor: str, render, before: bool, what: str) -> str:
    """``text`` with ``render(indent)`` put before (or after) the last line matching
    ``anchor`` (a regex with an ``indent`` group), in that line's indentation."""
    found = list(re.finditer(anchor, text, re.M))
    if not found:
        raise Refused(f"{where} has no {what} to put the new entry beside: add it by hand "
                      "(docs/adding-a-system.md §1)")
    m = found[-1]
    line = render(m.group("indent"))
    return text[:m.start()] + line + text[m.start():] if before else text[:m.end()] + line + text[m.end():]


def pom_edits(root: Path, name: str) -> dict[Path, str]:
    """The new texts of system/pom.xml and system/launcher/pom.xml: text edits beside the
    existing entries, so each file keeps its formatting."""
    parent, launcher = root / "system" / "pom.xml", root / "system" / "launcher" / "pom.xml"
    for f in (parent, launcher):
        if not f.exists():
            raise Refused(f"{f.relative_to(root)} is missing: run from a k2bench checkout (or give --root)")
    p, lp = parent.read_text(), launcher.read_text()
    artifact = f"<artifactId>k2bench-{name}</artifactId>"
    if f"<module>{name}</module>" in p or artifact in p or artifact in lp:
        raise Refused(f"{name!r} is already in the poms (system/pom.xml or system/launcher/pom.xml): "
                      "remove the entries or choose another name")
    # The modules before ycsb and the launcher, which bundle them.
    p = _insert("system/pom.xml", p, r"^(?P<indent>[ \t]*)<module>ycsb</module>",
                lambda i: f"{i}<module>{name}</module>\n", True, "<module>ycsb</module> line")
    # A dependencyManagement entry after the last k2bench-* one, shaped as they are.
    p = _insert("system/pom.xml", p, r"^(?P<indent>[ \t]*)<dependency>\s*<groupId>org\.k2bench</groupId>\s*"
                r"<artifactId>k2bench-[a-z0-9-]+</artifactId>\s*<version>\$\{project\.version\}</version>\s*"
                r"</dependency>[ \t]*$",
                lambda i: (f"\n{i}<dependency>\n{i}  <groupId>org.k2bench</groupId>\n{i}  {artifact}\n"
                           f"{i}  <version>${{project.version}}</version>\n{i}</dependency>"),
                False, "k2bench-* entry under <dependencyManagement>")
    # The launcher's runtime dependency, after the bundled systems'.
    lp = _insert("system/launcher/pom.xml", lp, r"^(?P<indent>[ \t]*)<dependency><groupId>org\.k2bench</groupId>"
                 r"<artifactId>k2bench-[a-z0-9-]+</artifactId><scope>runtime</scope></dependency>[ \t]*$",
                 lambda i: f"\n{i}<dependency><groupId>org.k2bench</groupId>{artifact}<scope>runtime</scope>"
                           "</dependency>",
                 False, "runtime dependency on a bundled system")
    return {parent: p, launcher: lp}


def render(root: Path, name: str) -> dict[str, str]:
    """Module-relative path -> text, from the templates."""
    import jinja2

    parent = (root / "system" / "pom.xml").read_text()
    version = re.search(r"<artifactId>k2bench-system</artifactId>\s*<version>([^<]+)</version>", parent)
    if not version:
        raise Refused("system/pom.xml names no version for k2bench-system: fix system/pom.xml")
    template_dir = root / "system" / ".template"
    missing = [t for t in FILES if not (template_dir / t).exists()]
    if missing:
        raise Refused(f"system/.template/{missing[0]} is missing: restore system/.template from git")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, autoescape=False)
    package, cls = "org.k2bench." + name.replace("-", ""), class_prefix(name)
    values = {"name": name, "cls": cls, "package": package, "version": version.group(1)}
    return {out.format(path=package.replace(".", "/"), cls=cls): env.get_template(t).render(values)
            for t, out in FILES.items()}


def generate(root: Path, name: str) -> list[Path]:
    """Writes the module and the pom edits; returns what was written. Raises Refused,
    having written nothing."""
    root = root.resolve()
    check_name(root, name)
    poms = pom_edits(root, name)
    files = render(root, name)
    module = root / "system" / name
    # The module is built aside and moved into place, the poms replaced whole: a failure
    # part way leaves the tree as it was.
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root / "system"))
    originals, moved = {f: f.read_text() for f in poms}, False
    try:
        for rel, text in files.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_text(text)
        staging.rename(module)
        moved = True
        for f, text in poms.items():
            tmp = f.with_name(f.name + ".new")
            tmp.write_text(text)
            os.replace(tmp, f)
    except BaseException:
        for f, text in originals.items():
            f.write_text(text)
            f.with_name(f.name + ".new").unlink(missing_ok=True)
        shutil.rmtree(module if moved else staging, ignore_errors=True)
        raise
    return [module / rel for rel in files] + list(poms)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="k2bench.scaffold", description="a new system's module, registered in the poms")
    p.add_argument("name", help="the system's name, e.g. my-sys: its module is system/<name>")
    p.add_argument("--root", type=Path, default=ROOT, help="the k2bench checkout (default: this one)")
    args = p.parse_args(argv)
    try:
        written = generate(args.root, args.name)
    except Refused as e:
        print(f"new-system: {e}", file=sys.stderr)
        return 2
    root = args.root.resolve()
    print(f"new system {args.name} (class {class_prefix(args.name)}System), wrote:")
    for f in written:
        print(f"  {f.relative_to(root)}")
    print(f"""next:
  make build                                   builds system/launcher/target/k2bench.jar with it
  .venv/bin/k2bench systems                    lists it
  an experiment with `systems: [{args.name}]`, e.g. a copy of workloads/default.yaml, and
  .venv/bin/k2bench run <file>                 runs it
It delegates to an existing system's protocol for now: replace that with your server and
client, in system/{args.name}/src/main/java (docs/adding-a-system.md §3-4).""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
