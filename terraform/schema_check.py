"""Check Terraform configurations name by name against the providers' real schemas, offline.

For each configuration directory and the local modules it calls: every resource and data
source type exists in its provider; every argument and nested block (dynamic ones too)
exists where it is written and is not one the provider computes; no required argument or
block is missing; every reference to a resource's or data source's attribute
(`aws_subnet.public[k].id`, `self.locations`, into nested blocks) names an attribute of that
type; every `var.`, `local.` and `module.<name>.<output>` names something declared, and a
module call passes only the module's variables and all of those without a default.

The schemas come from terraform/provider_schemas.py (`make tf-schemas`). Terraform's own
`terraform_data` is described below from its documentation. Findings are printed one a
line as file:line: what, and the exit status is 1 if there is any.

Usage: python3 terraform/schema_check.py [--schemas FILE] DIR...
"""
import argparse
import difflib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "target" / "terraform-schemas" / "schemas.json"
BUILTIN = "terraform.io/builtin/terraform"
# terraform_data (Terraform >= 1.4, "The terraform_data Managed Resource Type" in its docs)
BUILTIN_SCHEMA = {"resource_schemas": {"terraform_data": {"attributes": {
    "id": {"type": "string", "computed": True}, "input": {"type": "dynamic", "optional": True},
    "output": {"type": "dynamic", "computed": True}, "triggers_replace": {"type": "dynamic", "optional": True}}}},
    "data_source_schemas": {}, "version": "(built in)"}
META = {"resource": {"count", "for_each", "provider", "depends_on", "lifecycle", "provisioner", "connection"},
        "data": {"count", "for_each", "provider", "depends_on", "lifecycle"},
        "module": {"source", "version", "count", "for_each", "providers", "depends_on"}}
NAME = r"[A-Za-z_][\w-]*"
INDEX = r"(?:\[[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\])*"  # [k], [m[k]], [*], none


@dataclass
class Finding:
    file: Path
    line: int
    text: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.text}"


class Source:
    """One .tf file: its text for line numbers and its parsed blocks."""

    def __init__(self, path: Path):
        import hcl2  # the project's virtualenv has it (requirements.txt)
        self.path = path
        self.text = path.read_text()
        self.lines = self.text.split("\n")
        options = hcl2.SerializationOptions(with_comments=False, explicit_blocks=True, strip_string_quotes=True)
        self.doc = hcl2.loads(self.text, serialization_options=options)

    def line_of_block(self, kind: str, *labels: str) -> int:
        pattern = re.compile(r"^\s*" + re.escape(kind) + "".join(rf'\s+"?{re.escape(x)}"?' for x in labels) + r"\s*\{")
        return next((i + 1 for i, line in enumerate(self.lines) if pattern.match(line)), 1)

    def line_of_key(self, after: int, key: str) -> int:
        pattern = re.compile(rf'^\s*(?:{re.escape(key)}\s*(?:=|\{{)|dynamic\s+"{re.escape(key)}")')
        return next((i + 1 for i in range(after - 1, len(self.lines)) if pattern.match(self.lines[i])), after)

    def line_of_text(self, regex: str) -> int:
        m = re.search(regex, self.text)
        return self.text.count("\n", 0, m.start()) + 1 if m else 1


def suggest(name: str, known) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f'; did you mean "{close[0]}"?' if close else ""


def strings(value):
    """Every string in a parsed value (expressions are strings), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k != "__is_block__":
                yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


class Config:
    """A module directory: its files, declarations and the schemas its providers answer to."""

    def __init__(self, directory: Path, schemas: dict, findings: list, seen: set, counts: dict):
        self.dir = directory
        self.schemas = schemas
        self.findings = findings
        self.counts = counts  # what was checked: a clean result over nothing would prove nothing
        self.sources = [Source(p) for p in sorted(directory.glob("*.tf"))]
        self.providers = {"terraform": BUILTIN}
        self.resources, self.data, self.modules, self.variables, self.locals, self.outputs = {}, {}, {}, {}, set(), set()
        for s in self.sources:
            for t in s.doc.get("terraform", []):
                for rp in t.get("required_providers", []):
                    for local, req in rp.items():
                        if isinstance(req, dict) and "source" in req:
                            src = req["source"]
                            self.providers[local] = src if src.count("/") == 2 else f"registry.terraform.io/{src}"
            for kind, table in (("resource", self.resources), ("data", self.data)):
                for block in s.doc.get(kind, []):
                    for rtype, named in block.items():
                        for name, body in named.items():
                            table[(rtype, name)] = (s, body)
            for block in s.doc.get("module", []):
                for name, body in block.items():
                    self.modules[name] = (s, body)
            for block in s.doc.get("variable", []):
                for name, body in block.items():
                    self.variables[name] = body
            for block in s.doc.get("locals", []):
                self.locals.update(k for k in block if k != "__is_block__")
            for block in s.doc.get("output", []):
                self.outputs.update(block)
        seen.add(directory.resolve())
        self.children = {}
        for name, (s, body) in self.modules.items():
            src = body.get("source", "")
            if isinstance(src, str) and src.startswith(("./", "../")):
                path = (directory / src).resolve()
                if not path.is_dir():
                    self.add(s, s.line_of_block("module", name), f'module "{name}": source {src} is not a directory')
                elif path not in seen:
                    self.children[name] = Config(path, schemas, findings, seen, counts)

    def add(self, source: Source, line: int, text: str):
        self.findings.append(Finding(source.path, line, text))

    def provider_of(self, rtype: str) -> tuple[str, dict | None]:
        local = rtype.split("_", 1)[0]
        address = self.providers.get(local, f"registry.terraform.io/hashicorp/{local}")
        schema = BUILTIN_SCHEMA if address == BUILTIN else self.schemas.get(address)
        return address, schema

    def schema_of(self, kind: str, rtype: str) -> dict | None:
        _, provider = self.provider_of(rtype)
        if provider is None:
            return None
        return provider["resource_schemas" if kind == "resource" else "data_source_schemas"].get(rtype)

    def label(self, rtype: str) -> str:
        address, provider = self.provider_of(rtype)
        return f"{address.removeprefix('registry.terraform.io/')} {provider['version']}" if provider else address

    # ---- blocks ------------------------------------------------------------------------

    def check_body(self, source: Source, line: int, what: str, body: dict, block: dict, meta: set, provider: str):
        attributes, block_types = block.get("attributes", {}), block.get("block_types", {})
        given = set()
        for key, value in body.items():
            if key == "__is_block__" or key in meta:
                continue
            if key == "dynamic":
                for dyn in value:
                    for name, spec in dyn.items():
                        if name == "__is_block__":
                            continue
                        at = source.line_of_key(line, name)
                        given.add(name)
                        if name not in block_types:
                            self.add(source, at, f'{what}: no block type "{name}" for dynamic ({provider}'
                                                 f'{suggest(name, block_types)})')
                            continue
                        for content in spec.get("content", []):
                            self.check_body(source, at, f"{what}.{name}", content, block_types[name]["block"], set(),
                                            provider)
                continue
            given.add(key)
            self.counts["arguments"] += 1
            at = source.line_of_key(line, key)
            if key in attributes:
                if attributes[key].get("computed") and not (attributes[key].get("optional")
                                                            or attributes[key].get("required")):
                    self.add(source, at, f'{what}: "{key}" is computed by the provider and cannot be set ({provider})')
            elif key in block_types:
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if isinstance(item, dict) and item.get("__is_block__"):
                        self.check_body(source, at, f"{what}.{key}", item, block_types[key]["block"], set(), provider)
                    else:
                        self.add(source, at, f'{what}: "{key}" is a block, written as an argument ({provider})')
            else:
                self.add(source, at, f'{what}: unsupported argument or block "{key}" ({provider}'
                                     f'{suggest(key, set(attributes) | set(block_types))})')
        for name, a in attributes.items():
            if a.get("required") and name not in given:
                self.add(source, line, f'{what}: missing required argument "{name}" ({provider})')
        for name, bt in block_types.items():
            if bt.get("min_items", 0) > 0 and name not in given:
                self.add(source, line, f'{what}: missing required block "{name}" ({provider})')

    def check_blocks(self):
        for kind, table in (("resource", self.resources), ("data", self.data)):
            for (rtype, name), (s, body) in table.items():
                line = s.line_of_block(kind, rtype, name)
                what = f"{'data.' if kind == 'data' else ''}{rtype}.{name}"
                address, provider = self.provider_of(rtype)
                if provider is None:
                    self.add(s, line, f"{what}: no schema for provider {address}: add it to "
                                      "terraform/provider-schemas.txt")
                    continue
                schema = self.schema_of(kind, rtype)
                if schema is None:
                    table_name = "resource_schemas" if kind == "resource" else "data_source_schemas"
                    self.add(s, line, f'{what}: {provider and self.label(rtype)} has no {kind} type "{rtype}"'
                                      f'{suggest(rtype, provider[table_name])}')
                    continue
                self.counts["blocks"] += 1
                self.check_body(s, line, what, body, schema, META[kind], self.label(rtype))
        for s in self.sources:
            for block in s.doc.get("provider", []):
                for local, body in block.items():
                    address = self.providers.get(local, f"registry.terraform.io/hashicorp/{local}")
                    schema = self.schemas.get(address)
                    line = s.line_of_block("provider", local)
                    if schema is None:
                        self.add(s, line, f'provider "{local}": no schema for {address}')
                        continue
                    self.check_body(s, line, f'provider "{local}"', body, schema["provider"]["block"], {"alias"},
                                    f"{address.removeprefix('registry.terraform.io/')} {schema['version']}")
        for name, (s, body) in self.modules.items():
            child = self.children.get(name)
            if child is None:
                continue
            line = s.line_of_block("module", name)
            for key in body:
                if key not in META["module"] and key != "__is_block__" and key not in child.variables:
                    self.add(s, s.line_of_key(line, key), f'module "{name}": {child.dir.name} has no variable "{key}"'
                                                        f'{suggest(key, child.variables)}')
            for var, spec in child.variables.items():
                if "default" not in spec and var not in body:
                    self.add(s, line, f'module "{name}": missing required variable "{var}"')
        for child in self.children.values():
            child.check_blocks()
            child.check_references()

    # ---- references --------------------------------------------------------------------

    def check_path(self, source: Source, what: str, rtype: str, block: dict, rest: str, ref_regex: str):
        """rest: '.attr[..].inner...' after a resource's address; checks as deep as blocks go."""
        m = re.match(rf"\.({NAME}){INDEX}", rest)
        if not m:
            return
        self.counts["references"] += 1
        attr = m.group(1)
        attributes, block_types = block.get("attributes", {}), block.get("block_types", {})
        if attr in block_types:
            self.check_path(source, what, rtype, block_types[attr]["block"], rest[m.end():],
                            ref_regex + re.escape(rest[:m.end()]))
        elif attr not in attributes:
            line = source.line_of_text(ref_regex + r"[^\n]*?\." + re.escape(attr) + r"\b")
            self.add(source, line, f'{what}: {rtype} has no attribute "{attr}" ({self.label(rtype)}'
                                   f'{suggest(attr, set(attributes) | set(block_types))})')

    def check_references(self):
        types = "|".join(sorted({re.escape(p) for p in self.providers}))
        ref = re.compile(rf"(?<![\w.])(data\.)?((?:{types})_\w+)\.({NAME})({INDEX})((?:\.{NAME}{INDEX})*)")
        other = re.compile(rf"(?<![\w.])(var|local|module)\.({NAME})((?:\.{NAME})?)")
        for s in self.sources:
            blocks = [(None, None, v) for k in ("module", "output", "locals", "variable") for v in s.doc.get(k, [])]
            for kind in ("resource", "data"):
                for block in s.doc.get(kind, []):
                    for rtype, named in block.items():
                        for name, body in named.items():
                            blocks.append((kind, rtype, body))
            for kind, own_type, body in blocks:
                for text in strings(body):
                    for m in ref.finditer(text):
                        is_data, rtype, name, _, rest = m.groups()
                        k = "data" if is_data else "resource"
                        what = f"{is_data or ''}{rtype}.{name}"
                        table = self.data if is_data else self.resources
                        if (rtype, name) not in table:
                            line = s.line_of_text(re.escape(what) + r"\b")
                            self.add(s, line, f"reference to {what}, which this module does not declare")
                            continue
                        schema = self.schema_of(k, rtype)
                        if schema is not None:
                            self.check_path(s, what, rtype, schema, rest, re.escape(what))
                    if own_type:
                        schema = self.schema_of(kind, own_type)
                        for m in re.finditer(rf"(?<![\w.])self((?:\.{NAME}{INDEX})+)", text):
                            if schema is not None:
                                self.check_path(s, f"self ({own_type})", own_type, schema, m.group(1), r"self")
                    for m in other.finditer(text):
                        space, name, rest = m.groups()
                        line = s.line_of_text(rf"(?<![\w.]){space}\.{re.escape(name)}\b")
                        if space == "var" and name not in self.variables:
                            self.add(s, line, f'reference to undeclared variable "var.{name}"'
                                              f'{suggest(name, self.variables)}')
                        elif space == "local" and name not in self.locals:
                            self.add(s, line, f'reference to undeclared local "local.{name}"'
                                              f'{suggest(name, self.locals)}')
                        elif space == "module":
                            if name not in self.modules:
                                self.add(s, line, f'reference to undeclared module "module.{name}"')
                            elif rest and name in self.children and rest[1:] not in self.children[name].outputs:
                                out = rest[1:]
                                self.add(s, s.line_of_text(rf"module\.{re.escape(name)}\.{re.escape(out)}\b"),
                                         f'module "{name}" has no output "{out}"'
                                         f'{suggest(out, self.children[name].outputs)}')


def check(directory: Path, schemas: dict, counts: dict | None = None) -> list[Finding]:
    """The findings for a configuration directory and its local modules; counts, if given, gets
    how many resources and data sources, arguments and blocks, and attribute references it checked."""
    findings, counts = [], counts if counts is not None else {}
    for k in ("blocks", "arguments", "references"):
        counts.setdefault(k, 0)
    config = Config(directory, schemas, findings, set(), counts)
    config.check_blocks()
    config.check_references()
    unique = {(f.file, f.line, f.text): f for f in findings}
    return sorted(unique.values(), key=lambda f: (str(f.file), f.line, f.text))


def load_schemas(path: Path) -> dict:
    if not path.exists():
        raise SystemExit(f"schema_check: {path} is missing: run `make tf-schemas`")
    return json.loads(path.read_text())["provider_schemas"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--schemas", type=Path, default=SCHEMAS)
    p.add_argument("dirs", nargs="+", type=Path)
    a = p.parse_args(argv)
    schemas = load_schemas(a.schemas)
    total, counts = 0, {}
    for d in a.dirs:
        if not d.is_dir():
            print(f"schema_check: {d} is not a directory", file=sys.stderr)
            return 2
        findings = check(d, schemas, counts)
        for f in findings:
            print(f)
        total += len(findings)
    print(f"schema_check: {total} finding{'s' if total != 1 else ''} in {', '.join(map(str, a.dirs))} "
          f"({counts['blocks']} resources and data sources, {counts['arguments']} arguments and blocks, "
          f"{counts['references']} attribute references checked)", file=sys.stderr)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
