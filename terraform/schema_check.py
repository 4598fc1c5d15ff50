"""Check Terraform configurations name by name against the providers' real schemas, offline.

For each configuration directory and the local modules it calls: every resource and data
source type exists in its provider; every argument and nested block (dynamic ones too)
exists where it is written and is not one the provider computes; no required argument or
block is missing; every reference to a resource's or data source's attribute
(`aws_subnet.public[k].id`, `aws_instance.host.*.id`, `self.locations`, into nested
blocks, and through a `for` expression's value variable over a resource's instances) names
an attribute of that type; every `var.`, `local.` and `module.<name>.<output>` names
something declared, and a module call passes only the module's variables and all of those
without a default. References are read in expressions only, never in quoted prose; one
reached some other way (through a function's result, say) is not checked.

The schemas come from terraform/provider_schemas.py (`make tf-schemas`). Terraform's own
`terraform_data` is described below from its documentation. Findings are printed one a
line as file:line: what, and the exit status is 1 if there is any, 2 on bad input.

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
        "module": {"source", "version", "count", "for_each", "providers", "depends_on"},
        "provider": {"alias", "version"}}
NAME = r"[A-Za-z_][\w-]*"
INDEX = r"(?:\[[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\]|\.\*)*"  # [k], [m[k]], [*], .* (legacy splat), none


class CheckError(Exception):
    """Input the check cannot read: one line."""


@dataclass
class Finding:
    file: Path
    line: int
    text: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.text}"


def block_depths(text: str) -> tuple[list[int], list[int]]:
    """The block nesting depth at the start of each line (braces in strings, template
    interpolations, heredocs and comments do not count), and the column where each line's
    comment starts (its length when it has none)."""
    depths, comments, depth, stack, heredoc, in_comment = [], [], 0, [], None, False
    for line in text.split("\n"):
        depths.append(depth)
        comments.append(len(line))
        if heredoc:
            if line.strip() == heredoc:
                heredoc = None
            continue
        i, n = 0, len(line)
        while i < n:
            c, two = line[i], line[i:i + 2]
            mode = stack[-1] if stack else None
            if in_comment:
                if two == "*/":
                    in_comment, i = False, i + 2
                    continue
            elif mode == "str":
                if c == "\\":
                    i += 1
                elif c == '"':
                    stack.pop()
                elif two in ("${", "%{"):
                    stack.append(0)
                    i += 1
            else:  # code, or an interpolation (an int: its own open braces)
                if c == "#" or two == "//":
                    comments[-1] = i
                    break
                if two == "/*":
                    comments[-1] = min(comments[-1], i)
                    in_comment, i = True, i + 2
                    continue
                m = re.match(r"<<-?(\w+)\s*$", line[i:])
                if m and mode is None:
                    heredoc = m.group(1)
                    break
                if c == '"':
                    stack.append("str")
                elif c == "{":
                    if mode is None:
                        depth += 1
                    else:
                        stack[-1] += 1
                elif c == "}":
                    if mode is None:
                        depth -= 1
                    elif mode == 0:
                        stack.pop()
                    else:
                        stack[-1] -= 1
            i += 1
    return depths, comments


class Source:
    """One .tf file: its text for line numbers and its parsed blocks."""

    def __init__(self, path: Path):
        import hcl2  # the project's virtualenv has it (requirements.txt)
        self.path = path
        self.text = path.read_text()
        self.lines = self.text.split("\n")
        self.depths, self.comments = block_depths(self.text)
        options = hcl2.SerializationOptions(with_comments=False, explicit_blocks=True, strip_string_quotes=True)
        try:
            self.doc = hcl2.loads(self.text, serialization_options=options)
        except Exception as e:  # lark's errors span lines; the first says where
            raise CheckError(f"{path}: cannot parse it as HCL: {str(e).strip().splitlines()[0]}") from None

    def depth(self, line: int) -> int:
        return self.depths[line - 1]

    def end_of(self, start: int) -> int:
        """The last line of the block whose header is at `start`."""
        d = self.depth(start)
        end = start
        while end < len(self.lines) and self.depth(end + 1) > d:
            end += 1
        return end  # the closing brace's line (depths are taken at each line's start)

    def top_block(self, kind: str, labels: tuple = (), nth: int = 0) -> int:
        pattern = re.compile(r"^\s*" + re.escape(kind) + "".join(rf'\s+"?{re.escape(x)}"?' for x in labels) + r"\s*\{")
        hits = [i + 1 for i, line in enumerate(self.lines) if pattern.match(line) and self.depths[i] == 0]
        return hits[nth] if nth < len(hits) else (hits[0] if hits else 1)

    def child(self, parent: int, key: str, nth: int = 0, dynamic: bool = False) -> int:
        """The line of the nth `key = ...`, `key {` (or `dynamic "key" {`) directly in a block."""
        d = self.depth(parent) + 1
        pattern = (re.compile(rf'^\s*dynamic\s+"{re.escape(key)}"\s*\{{') if dynamic else
                   re.compile(rf"^\s*{re.escape(key)}\s*(?:=|\{{)"))
        hits = [i for i in range(parent + 1, self.end_of(parent) + 1)
                if self.depth(i) == d and pattern.match(self.lines[i - 1])]
        return hits[nth] if nth < len(hits) else (hits[0] if hits else parent)

    def within(self, start: int, regex: str, nth: int = 0) -> int:
        """The line of the nth match of regex in the block at `start`, comments left out."""
        hits = [i for i in range(start, self.end_of(start) + 1)
                if re.search(regex, self.lines[i - 1][:self.comments[i - 1]])]
        return hits[nth] if nth < len(hits) else (hits[0] if hits else start)


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


def closing(text: str, j: int, opens: str, closes: str) -> int:
    """The index of the first closing character from j on that closes nothing opened after j,
    quoted strings skipped; the text's length if there is none."""
    depth, quoted = 0, False
    while j < len(text):
        c = text[j]
        if quoted:
            if c == "\\":
                j += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in opens:
            depth += 1
        elif c in closes:
            if depth == 0:
                return j
            depth -= 1
        j += 1
    return len(text)


def expressions(text: str):
    """The expressions in a parsed value: the parser writes each as ${...} (or a %{...}
    directive); the rest is prose."""
    i = 0
    while True:
        m = re.compile(r"[$%]\{").search(text, i)
        if not m:
            return
        i = m.start()
        if i > 0 and text[i - 1] == text[i]:  # $${ and %%{ are the literal characters
            i += 2
            continue
        j = closing(text, i + 2, "{", "}")
        yield text[i + 2:j]
        i = j + 1


def for_end(text: str, start: int) -> int:
    """Where the `for` expression at `start` ends: the bracket that closes the one around it."""
    opening = max(text.rfind("[", 0, start), text.rfind("{", 0, start))
    return len(text) if opening < 0 else closing(text, opening + 1, "[{(", "]})")


def object_fields(ty) -> dict | None:
    """The fields of a list or set of objects: the attributes Terraform lets a configuration
    write as blocks (its blocktoattr fix-up; a lone object must be written `= {...}`)."""
    if isinstance(ty, list) and len(ty) == 2 and ty[0] in ("list", "set") and isinstance(ty[1], list) \
            and ty[1] and ty[1][0] == "object":
        return ty[1][1]
    return None


def is_block(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) and v.get("__is_block__") for v in value)


class Config:
    """A module directory: its files, declarations and the schemas its providers answer to."""

    def __init__(self, directory: Path, schemas: dict, findings: list, seen: set, counts: dict):
        self.dir = directory
        self.schemas = schemas
        self.findings = findings
        self.counts = counts  # what was checked: a clean result over nothing would prove nothing
        self.checked = False
        files = sorted(directory.glob("*.tf"))
        if not files:
            raise CheckError(f"{directory}: no .tf files: not a Terraform configuration")
        self.sources = [Source(p) for p in files]
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
        seen[directory.resolve()] = self
        self.children = {}  # call name -> the module's Config (one per directory, however often called)
        for name, (s, body) in self.modules.items():
            src = body.get("source", "")
            if isinstance(src, str) and src.startswith(("./", "../")):
                path = (directory / src).resolve()
                if not path.is_dir():
                    self.add(s, s.top_block("module", (name,)), f'module "{name}": source {src} is not a directory')
                else:
                    self.children[name] = seen.get(path) or Config(path, schemas, findings, seen, counts)

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

    def check_fields(self, source: Source, line: int, what: str, body: dict, fields: dict, provider: str):
        """An attribute of objects written as a block: its keys against the object's fields."""
        for key, value in body.items():
            if key == "__is_block__":
                continue
            at = source.child(line, key)
            self.counts["arguments"] += 1
            if key not in fields:
                self.add(source, at, f'{what}: unsupported argument "{key}" ({provider}{suggest(key, fields)})')
            elif is_block(value):
                if object_fields(fields[key]) is None:
                    self.add(source, at, f'{what}: "{key}" is an argument, written as a block ({provider})')
                    continue
                for i, item in enumerate(value):
                    self.check_fields(source, source.child(line, key, i), f"{what}.{key}", item,
                                      object_fields(fields[key]), provider)

    def check_body(self, source: Source, line: int, what: str, body: dict, block: dict, meta: set, provider: str):
        attributes, block_types = block.get("attributes", {}), block.get("block_types", {})
        given = set()
        for key, value in body.items():
            if key == "__is_block__" or key in meta:
                continue
            if key == "dynamic":
                nth = {}
                for dyn in value:
                    for name, spec in dyn.items():
                        if name == "__is_block__":
                            continue
                        nth[name] = nth.get(name, -1) + 1
                        at = source.child(line, name, nth[name], dynamic=True)
                        given.add(name)
                        if name in block_types:
                            inner, check = block_types[name]["block"], self.check_body
                        elif name in attributes and object_fields(attributes[name]["type"]) is not None:
                            inner, check = object_fields(attributes[name]["type"]), self.check_fields
                        else:
                            self.add(source, at, f'{what}: no block type "{name}" for dynamic ({provider}'
                                                 f'{suggest(name, block_types)})')
                            continue
                        for content in spec.get("content", []):
                            where = source.child(at, "content")
                            if check == self.check_body:
                                check(source, where, f"{what}.{name}", content, inner, set(), provider)
                            else:
                                check(source, where, f"{what}.{name}", content, inner, provider)
                continue
            given.add(key)
            self.counts["arguments"] += 1
            at = source.child(line, key)
            if key in attributes:
                a = attributes[key]
                if a.get("computed") and not (a.get("optional") or a.get("required")):
                    self.add(source, at, f'{what}: "{key}" is computed by the provider and cannot be set ({provider})')
                elif is_block(value):
                    fields = object_fields(a["type"])
                    if fields is None:
                        self.add(source, at, f'{what}: "{key}" is an argument, written as a block ({provider})')
                    else:  # Terraform lets an attribute of objects be written as blocks
                        for i, item in enumerate(value):
                            self.check_fields(source, source.child(line, key, i), f"{what}.{key}", item, fields,
                                              provider)
            elif key in block_types:
                for i, item in enumerate(value if isinstance(value, list) else [value]):
                    if isinstance(item, dict) and item.get("__is_block__"):
                        self.check_body(source, source.child(line, key, i), f"{what}.{key}", item,
                                        block_types[key]["block"], set(), provider)
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
                line = s.top_block(kind, (rtype, name))
                what = f"{'data.' if kind == 'data' else ''}{rtype}.{name}"
                address, provider = self.provider_of(rtype)
                if provider is None:
                    self.add(s, line, f"{what}: no schema for provider {address}: add it to "
                                      "terraform/provider-schemas.txt")
                    continue
                schema = self.schema_of(kind, rtype)
                if schema is None:
                    table_name = "resource_schemas" if kind == "resource" else "data_source_schemas"
                    self.add(s, line, f'{what}: {self.label(rtype)} has no {kind} type "{rtype}"'
                                      f'{suggest(rtype, provider[table_name])}')
                    continue
                self.counts["blocks"] += 1
                self.check_body(s, line, what, body, schema, META[kind], self.label(rtype))
        for s in self.sources:
            nth = {}
            for block in s.doc.get("provider", []):
                for local, body in block.items():
                    address = self.providers.get(local, f"registry.terraform.io/hashicorp/{local}")
                    schema = self.schemas.get(address)
                    nth[local] = nth.get(local, -1) + 1
                    line = s.top_block("provider", (local,), nth[local])
                    if schema is None:
                        self.add(s, line, f'provider "{local}": no schema for {address}')
                        continue
                    self.check_body(s, line, f'provider "{local}"', body, schema["provider"]["block"],
                                    META["provider"],
                                    f"{address.removeprefix('registry.terraform.io/')} {schema['version']}")
        for name, (s, body) in self.modules.items():
            child = self.children.get(name)
            if child is None:
                continue
            line = s.top_block("module", (name,))
            for key in body:
                if key not in META["module"] and key != "__is_block__" and key not in child.variables:
                    self.add(s, s.child(line, key), f'module "{name}": {child.dir.name} has no variable "{key}"'
                                                   f'{suggest(key, child.variables)}')
            for var, spec in child.variables.items():
                if "default" not in spec and var not in body:
                    self.add(s, line, f'module "{name}": missing required variable "{var}"')
        for child in {id(c): c for c in self.children.values()}.values():
            if not child.checked:
                child.checked = True
                child.check_blocks()
                child.check_references()

    # ---- references --------------------------------------------------------------------

    def check_path(self, source: Source, start: int, seen: dict, what: str, rtype: str, block: dict, rest: str,
                   ref_regex: str):
        """rest: '.attr[..].inner...' after a resource's address; checks as deep as blocks go.
        seen counts each regex's matches in this block, so a repeated one is found at its own line."""
        m = re.match(rf"\.({NAME}){INDEX}", rest)
        if not m:
            return
        self.counts["references"] += 1
        attr = m.group(1)
        attributes, block_types = block.get("attributes", {}), block.get("block_types", {})
        if attr in block_types:
            self.check_path(source, start, seen, what, rtype, block_types[attr]["block"], rest[m.end():],
                            ref_regex + re.escape(rest[:m.end()]))
        elif attr not in attributes:
            regex = ref_regex + r"[^\n]*?\." + re.escape(attr) + r"\b"
            nth = seen[regex] = seen.get(regex, -1) + 1
            self.add(source, source.within(start, regex, nth),
                     f'{what}: {rtype} has no attribute "{attr}" ({self.label(rtype)}'
                     f'{suggest(attr, set(attributes) | set(block_types))})')

    def top_blocks(self, s: Source):
        """(kind, own type or None, start line, body) of each top-level block of a file."""
        out = []
        for kind in ("module", "output", "variable", "provider"):
            nth = {}  # provider "aws" may come twice (an alias)
            for block in s.doc.get(kind, []):
                for label, body in block.items():
                    if label != "__is_block__":
                        nth[label] = nth.get(label, -1) + 1
                        out.append((kind, None, s.top_block(kind, (label,), nth[label]), body))
        for i, block in enumerate(s.doc.get("locals", [])):
            out.append(("locals", None, s.top_block("locals", (), i), block))
        for kind in ("resource", "data"):
            for block in s.doc.get(kind, []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        out.append((kind, rtype, s.top_block(kind, (rtype, name)), body))
        return out

    def check_references(self):
        # provider names: required_providers' and, as Terraform infers them, declared types' prefixes
        prefixes = set(self.providers) | {t.split("_", 1)[0] for t, _ in list(self.resources) + list(self.data)}
        types = "|".join(sorted(re.escape(p) for p in prefixes))
        address = rf"(data\.)?((?:{types})_\w+)\.({NAME})"
        ref = re.compile(rf"(?<![\w.])" + address + rf"({INDEX})((?:\.{NAME}{INDEX})*)")
        over = re.compile(rf"\bfor\s+(?:{NAME}\s*,\s*)?({NAME})\s+in\s+{address}\s*:")
        other = re.compile(rf"(?<![\w.])(var|local|module)\.({NAME})((?:\.{NAME})?)")
        for s in self.sources:
            for kind, own_type, start, body in self.top_blocks(s):
                seen = {}
                for text in (e for t in strings(body) for e in expressions(t)):
                    for m in ref.finditer(text):
                        is_data, rtype, name, _, rest = m.groups()
                        what = f"{is_data or ''}{rtype}.{name}"
                        if (rtype, name) not in (self.data if is_data else self.resources):
                            regex = re.escape(what) + r"\b"
                            nth = seen[regex] = seen.get(regex, -1) + 1
                            self.add(s, s.within(start, regex, nth),
                                     f"reference to {what}, which this module does not declare")
                            continue
                        schema = self.schema_of("data" if is_data else "resource", rtype)
                        if schema is not None:
                            self.check_path(s, start, seen, what, rtype, schema, rest, re.escape(what))
                    for m in over.finditer(text):  # `for k, v in aws_x.y : v.attr`: v is an instance
                        var, is_data, rtype, name = m.groups()
                        schema = self.schema_of("data" if is_data else "resource", rtype)
                        if schema is None:
                            continue
                        for v in re.finditer(rf"(?<![\w.]){re.escape(var)}\b((?:\.{NAME}{INDEX})+)",
                                             text[m.end():for_end(text, m.start())]):
                            self.check_path(s, start, seen, f"{var} (an instance of {rtype}.{name})", rtype, schema,
                                            v.group(1), rf"(?<![\w.]){re.escape(var)}\b")
                    if own_type:
                        schema = self.schema_of(kind, own_type)
                        for m in re.finditer(rf"(?<![\w.])self\b((?:\.{NAME}{INDEX})+)", text):
                            if schema is not None:
                                self.check_path(s, start, seen, f"self ({own_type})", own_type, schema, m.group(1),
                                                r"(?<![\w.])self\b")
                    for m in other.finditer(text):
                        space, name, rest = m.groups()
                        regex = rf"(?<![\w.]){space}\.{re.escape(name)}\b"
                        if space == "var" and name not in self.variables:
                            nth = seen[regex] = seen.get(regex, -1) + 1
                            self.add(s, s.within(start, regex, nth), f'reference to undeclared variable '
                                                                     f'"var.{name}"{suggest(name, self.variables)}')
                        elif space == "local" and name not in self.locals:
                            nth = seen[regex] = seen.get(regex, -1) + 1
                            self.add(s, s.within(start, regex, nth), f'reference to undeclared local "local.{name}"'
                                                                     f'{suggest(name, self.locals)}')
                        elif space == "module":
                            if name not in self.modules:
                                self.add(s, s.within(start, regex), f'reference to undeclared module "module.{name}"')
                            elif rest and name in self.children and rest[1:] not in self.children[name].outputs:
                                out = rest[1:]
                                regex = rf"module\.{re.escape(name)}\.{re.escape(out)}\b"
                                nth = seen[regex] = seen.get(regex, -1) + 1
                                self.add(s, s.within(start, regex, nth), f'module "{name}" has no output "{out}"'
                                                                         f'{suggest(out, self.children[name].outputs)}')


def check(directory: Path, schemas: dict, counts: dict | None = None) -> list[Finding]:
    """The findings for a configuration directory and its local modules; counts, if given, gets
    how many resources and data sources, arguments and blocks, and attribute references it checked."""
    findings, counts = [], counts if counts is not None else {}
    for k in ("blocks", "arguments", "references"):
        counts.setdefault(k, 0)
    config = Config(directory, schemas, findings, {}, counts)
    config.checked = True
    config.check_blocks()
    config.check_references()
    unique = {(f.file, f.line, f.text): f for f in findings}
    return sorted(unique.values(), key=lambda f: (str(f.file), f.line, f.text))


def load_schemas(path: Path) -> dict:
    if not path.exists():
        raise CheckError(f"{path} is missing: run `make tf-schemas`")
    try:
        return json.loads(path.read_text())["provider_schemas"]
    except (ValueError, KeyError, TypeError):
        raise CheckError(f"{path} is not a providers' schema file (no provider_schemas): run `make tf-schemas`") \
            from None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--schemas", type=Path, default=SCHEMAS)
    p.add_argument("dirs", nargs="+", type=Path)
    a = p.parse_args(argv)
    total, counts = 0, {}
    try:
        schemas = load_schemas(a.schemas)
        for d in a.dirs:
            if not d.is_dir():
                raise CheckError(f"{d} is not a directory")
            findings = check(d, schemas, counts)
            for f in findings:
                print(f)
            total += len(findings)
    except CheckError as e:
        print(f"schema_check: {e}", file=sys.stderr)
        return 2
    print(f"schema_check: {total} finding{'s' if total != 1 else ''} in {', '.join(map(str, a.dirs))} "
          f"({counts['blocks']} resources and data sources, {counts['arguments']} arguments and blocks, "
          f"{counts['references']} attribute references checked)", file=sys.stderr)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
