"""The shape of the Python code: imports run one way (analysis reads what the harness writes
and is never imported by it), and no file grows past MAX_LINES without a reason."""
import ast

import pytest

from conftest import ROOT

MAX_LINES = 600
# Files still over the limit, each with its reason; an entry must stay true (a file that
# shrank below the limit leaves the list), so the list only shrinks.
OVER_LIMIT = {
    "terraform/emulab/portal.py": "one client of the Emulab portal's XML-RPC API, its calls and their errors",
    "tests/test_terraform.py": "one fixture set (a plan of each module) shared by every test",
    "tests/test_emulab_portal.py": "one fake portal shared by every test",
    "tests/test_analysis.py": "one fixture run shared by every test",
    "tests/test_ansible.py": "one fixture inventory shared by every test",
}


def python_files():
    return sorted(p for p in ROOT.rglob("*.py")
                  if not any(part.startswith(".") or part in ("runs", "node_modules", "build", "target") for part in
                             p.relative_to(ROOT).parts))


def imported_modules(path) -> list[tuple[int, str]]:
    """Every module a file imports, at any depth (imports inside functions too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def test_the_harness_never_imports_analysis():
    bad = [f"{p.relative_to(ROOT)}:{line} imports {m}" for p in sorted((ROOT / "k2bench").rglob("*.py"))
           for line, m in imported_modules(p) if m == "analysis" or m.startswith("analysis.")]
    assert not bad, "k2bench/ must not import analysis/ (analysis reads what the harness writes):\n" + "\n".join(bad)


def test_the_import_check_sees_an_import_inside_a_function(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from analysis.load import versus\n    import analysis\n")
    assert imported_modules(f) == [(2, "analysis.load"), (3, "analysis")]


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_is_over_the_limit_without_a_reason(path):
    rel = str(path.relative_to(ROOT))
    lines = len(path.read_text().splitlines())
    if rel in OVER_LIMIT:
        assert lines > MAX_LINES, f"{rel} has {lines} lines now: take it off OVER_LIMIT"
    else:
        assert lines <= MAX_LINES, (f"{rel} has {lines} lines (limit {MAX_LINES}): split it by what its parts do, "
                                    "or add it to OVER_LIMIT with the reason")


def test_every_file_over_the_limit_exists():
    missing = [f for f in OVER_LIMIT if not (ROOT / f).exists()]
    assert not missing, f"OVER_LIMIT names files that are gone: {missing}"


def system_literals(path, names) -> list[tuple[int, str]]:
    """String constants in a file that are exactly a system's name."""
    return sorted((n.lineno, n.value) for n in ast.walk(ast.parse(path.read_text(), str(path)))
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names)


def test_no_python_names_a_system():
    # a system's facts come from its descriptor; the parts systems play in a paper's claims
    # from the paper's cast (workloads/papers/<paper>.yaml), beside the experiment files
    from conftest import SYSTEMS
    names = set(SYSTEMS)
    assert {"k2", "nocc"} <= names
    bad = [f"{p.relative_to(ROOT)}:{line}: {v!r}" for d in ("k2bench", "analysis") for p in sorted((ROOT / d).rglob("*.py"))
           for line, v in system_literals(p, names)]
    assert not bad, ("a system's facts come from its descriptor (k2bench/systems.py) or its paper's cast "
                     "(workloads/papers/), not its name in the code:\n" + "\n".join(bad))


def test_the_name_check_sees_a_system_named_in_code(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('X = ("k2", "k2bench", "K2")\nY = {"rad": 1}\n')
    assert system_literals(f, {"k2", "rad"}) == [(1, "k2"), (2, "rad")]


def unresolved_imports(path, package_root) -> list[str]:
    """Every import of a k2bench or analysis module in a file (at any depth, relative ones
    resolved against the file's package) that names a module or attribute that is not there."""
    import importlib
    import importlib.util

    rel = path.relative_to(package_root).with_suffix("")
    parts = list(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    pkg = parts if rel.name == "__init__" else parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            target = ".".join(base + ([node.module] if node.module else []))
        elif node.module and node.module.split(".")[0] in ("k2bench", "analysis"):
            target = node.module
        else:
            continue
        if importlib.util.find_spec(target) is None:
            out.append(f"{path.relative_to(package_root)}:{node.lineno}: no module {target}")
            continue
        module = importlib.import_module(target)
        out += [f"{path.relative_to(package_root)}:{node.lineno}: {target} has no {a.name}" for a in node.names
                if not hasattr(module, a.name) and importlib.util.find_spec(f"{target}.{a.name}") is None]
    return out


def test_every_import_of_the_harness_resolves_also_inside_functions():
    # an import a function makes only when it runs (a lazy one) fails only then: a move of
    # a module must not leave one behind
    bad = [b for d in ("k2bench", "analysis", "tests") for p in sorted((ROOT / d).rglob("*.py"))
           if "fixtures" not in p.parts for b in unresolved_imports(p, ROOT)]
    assert not bad, "\n".join(bad)


def test_the_import_resolution_check_sees_a_stale_lazy_import(tmp_path):
    pkg = tmp_path / "k2bench" / "trial"
    pkg.mkdir(parents=True)
    f = pkg / "m.py"
    f.write_text("def f():\n    from .placement import redirect_dc\n    from ..placement import redirect_dc\n")
    assert unresolved_imports(f, tmp_path) == ["k2bench/trial/m.py:2: no module k2bench.trial.placement"]
