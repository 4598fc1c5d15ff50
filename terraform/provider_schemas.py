"""The real schemas of the Terraform providers terraform/ec2 uses, read offline.

The providers cannot be downloaded here, but PyPI's prebuilt CDK for Terraform bindings
(`cdktf-cdktf-provider-aws` and its siblings, pinned in provider-schemas.txt) are generated
from each provider release's own `terraform providers schema -json`: every resource, data
source and nested block is a JavaScript class whose code names each argument, block and
attribute as Terraform spells it, and whose jsii assembly says which arguments are optional.
This script reads those wheels (without importing them: that would need Node.js) and writes
the schemas in the shape of `terraform providers schema -json`:

    {"format_version": "1.0", "provider_schemas": {"registry.terraform.io/hashicorp/aws":
      {"version": "6.25.0", "provider": {"block": ...}, "resource_schemas": {...},
       "data_source_schemas": {...}}}}

with each block {"attributes": {name: {"type", "required"|"optional"|"computed": true}},
"block_types": {name: {"nesting_mode", "block", "min_items"?, "max_items"?}}}.

Each attribute's required, optional and computed flags come from the TypeScript the
JavaScript was compiled from (its source maps carry it), and a class whose flags name an
attribute the reading did not find, or a resource without flags, stops the build; the
providers' own nested blocks (assume_role, proxy) have none, and take the jsii reading. What the bindings do not carry is left
out rather than guessed: descriptions, sensitivity, a list block's max_items above 1 or
min_items above 1, and the inner shape of the few blocks they reduce to `any` (those are
typed dynamic).

Run: python3 terraform/provider_schemas.py WHEEL... -o schemas.json (`make tf-schemas` does,
into target/terraform-schemas/).
"""
import argparse
import base64
import io
import json
import re
import sys
import tarfile
import zipfile
from pathlib import Path

FORMAT = "1.0"

# cdktf's storage class of an argument's element -> its Terraform (cty) type; "any" is what the
# bindings make of a block nested too deep to spell out (aws_wafv2_web_acl's rule.statement)
ELEMENT_TYPES = {"string": "string", "number": "number", "boolean": "bool", "any": "dynamic"}
# a computed attribute's getter -> its type
GETTER_TYPES = {"String": "string", "Number": "number", "Boolean": "bool", "List": ["list", "string"],
                "NumberList": ["list", "number"], "StringMap": ["map", "string"],
                "NumberMap": ["map", "number"], "BooleanMap": ["map", "bool"], "AnyMap": ["map", "dynamic"]}


class SchemaError(Exception):
    pass


# ---- a little JavaScript: the generated code's class and function bodies ------------------

def matching_brace(src: str, i: int) -> int:
    """Index just past the brace closing the one at src[i], skipping strings and comments."""
    depth, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "'\"`":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if src.startswith("//", i):
            i = src.find("\n", i)
            i = n if i < 0 else i
            continue
        if src.startswith("/*", i):
            i = src.find("*/", i) + 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise SchemaError("unbalanced braces")


def bodies(src: str, pattern: str) -> dict[str, str]:
    """name -> body of each class or function whose header matches pattern (group 1: name)."""
    out = {}
    for m in re.finditer(pattern, src):
        start = src.index("{", m.end() - 1)
        out[m.group(1)] = src[start:matching_brace(src, start)]
    return out


ATTR = re.compile(r"^ +(\w+): \{\s*value: (.*?),\s*isBlock: (true|false),\s*type: \"(\w+)\",\s*"
                  r"storageClassType: \"(\w+)\",\s*\}", re.M | re.S)
# `return this.getStringAttribute('x')`, and wrapped: cdktf.Fn.tolist(...) reads a set as a list
GETTER = re.compile(r"get (\w+)\(\) \{\s*return ((?:[\w.]+\()*)this\.get(\w*)Attribute\('([\w-]+)'\)")
INTERPOLATED = re.compile(r"get (\w+)\(\) \{\s*return this\.interpolationForAttribute\('([\w-]+)'\)")
COMPLEX = re.compile(r"this\._(\w+) = new (\w+?)(OutputReference|List|Map)\(this, \"([\w-]+)\"(?:, (true|false))?\)")
SIMPLE_MAP = re.compile(r"this\._(\w+) = new cdktf\.(String|Number|Boolean|Any)Map\(this, \"([\w-]+)\"\)")
# The TypeScript the JavaScript was compiled from (each file's source map carries it) names
# every attribute of every class with the schema's own flags:
#   // private_ip - computed: true, optional: true, required: false
TS_CLASS = re.compile(r"^export class (\w+)", re.M)
TS_FLAGS = re.compile(r"^\s*// ([\w-]+) - computed: (true|false), optional: (true|false), required: (true|false)$",
                      re.M)
SOURCE_MAP = re.compile(r"sourceMappingURL=data:application/json;(?:charset=utf-8;)?base64,([A-Za-z0-9+/=]+)\s*$")
MAP_TYPES = {"String": "string", "Number": "number", "Boolean": "bool", "Any": "dynamic"}


def storage_type(kind: str, storage: str):
    """The cty type of an argument from cdktf's kind (simple, list, set, map) and storage class
    (stringList, stringMapList: the element type, then each collection around it)."""
    m = re.fullmatch(r"(string|number|boolean|any)((?:List|Map)*)", storage)
    if not m:
        return "dynamic"
    ty = ELEMENT_TYPES[m.group(1)]
    layers = re.findall("List|Map", m.group(2))
    for i, layer in enumerate(layers):
        outermost = i == len(layers) - 1
        ty = ["map", ty] if layer == "Map" else ["set" if outermost and kind == "set" else "list", ty]
    return ty


def object_type(block: dict):
    """The cty object type of a block's schema (nested blocks as lists or sets of objects)."""
    fields = {name: a["type"] for name, a in block.get("attributes", {}).items()}
    for name, bt in block.get("block_types", {}).items():
        inner = object_type(bt["block"])
        fields[name] = inner if bt["nesting_mode"] == "single" else [bt["nesting_mode"], inner]
    return ["object", fields]


def flags_of(ts: str) -> dict[str, dict[str, tuple[bool, bool, bool]]]:
    """class -> attribute name -> (computed, optional, required), from the TypeScript."""
    out, marks = {}, [(m.start(), m.group(1)) for m in TS_CLASS.finditer(ts)]
    for m in TS_FLAGS.finditer(ts):
        owner = next((name for pos, name in reversed(marks) if pos < m.start()), None)
        if owner:
            out.setdefault(owner, {})[m.group(1)] = tuple(x == "true" for x in m.group(2, 3, 4))
    return out


def typescript(js: str, where: str) -> str:
    m = SOURCE_MAP.search(js)
    sources = json.loads(base64.b64decode(m.group(1))).get("sourcesContent") if m else None
    if not sources:  # without it every flag would fall back to the jsii reading, unseen
        raise SchemaError(f"{where}: no source map with the TypeScript: the flags cannot be read")
    return "\n".join(sources)


class Module:
    """One resource's (data source's, provider's) generated code: its lib/<name>/ directory,
    index.js and, for the largest, index-structs/*.js, whose names it qualifies."""

    def __init__(self, sources: list[str], structs: dict, where: str):
        # `new structs0_1.X(`, `(0, structs0_1.xToHclTerraform)(`: one namespace here
        src = "\n".join(re.sub(r"\b\w+_\d+\.(\w+)", r"\1", re.sub(r"\(0, (\w+_\d+\.\w+)\)", r"\1", js))
                        for js in sources)
        self.src = src
        self.classes = bodies(src, r"\nclass (\w+) extends [\w.]+ \{")
        self.functions = bodies(src, r"\nfunction (\w+)ToHclTerraform\(struct\) \{")
        self.flags = {}
        for js in sources:
            self.flags.update(flags_of(typescript(js, where)))
        self.structs = structs  # jsii fqn-less name -> {camel property: optional}

    def args(self, body: str) -> dict:
        """tf name -> (camel name, is block, collection kind, storage class) of a ToHcl attrs dict."""
        out = {}
        for name, value, is_block, kind, storage in ATTR.findall(body):
            camel = re.search(r"(?:struct|this)\.(?:_)?(\w+)", value)
            nested = re.search(r"(\w+)ToHclTerraform\b", value)
            out[name] = (camel.group(1) if camel else None, is_block == "true", kind, storage,
                         nested.group(1) if nested and is_block == "true" else None)
        return out

    def readable(self, cls: str) -> dict:
        """tf name -> type (or a nested block's schema) of what a class's getters read."""
        body = self.classes.get(cls, "")
        out = {}
        for _, wrappers, kind, name in GETTER.findall(body):
            ty = GETTER_TYPES.get(kind, "dynamic")
            out[name] = ["set", ty[1]] if "tolist(" in wrappers and isinstance(ty, list) else ty
        for _, name in INTERPOLATED.findall(body):
            out.setdefault(name, "dynamic")
        for _, kind, name in SIMPLE_MAP.findall(body):
            out[name] = ["map", MAP_TYPES[kind]]
        for _, base, kind, name, is_set in COMPLEX.findall(body):
            out[name] = ("complex", base, kind, is_set == "true")
        return out

    def block(self, args_body: str, cls: str, struct: str | None) -> dict:
        """The schema of a block: its arguments from args_body, its computed attributes from cls,
        each one's flags from the TypeScript's comment on it."""
        optional = self.structs.get(struct, {}) if struct else {}
        flags = self.flags.get(cls, {})
        attributes, block_types = {}, {}
        args = self.args(args_body)
        readable = self.readable(cls)

        def marks(name, camel, default_required=False):
            if name in flags:
                computed, opt, required = flags[name]
                return {k: True for k, v in (("required", required), ("optional", opt), ("computed", computed)) if v}
            required = default_required or (bool(camel) and optional.get(camel) is False)
            return {"required": True} if required else {"optional": True}

        for name, (camel, is_block, kind, storage, nested) in args.items():
            m = marks(name, camel)
            if is_block:
                inner_struct = nested[:1].upper() + nested[1:]
                nested_block = self.block(self.functions.get(nested, ""), inner_struct + "OutputReference",
                                          inner_struct)
                if m.get("computed") or (kind == "struct" and name != "timeouts"):
                    # To Terraform an attribute of objects: computed ones written as blocks (which it
                    # lets a configuration write either way: aws_security_group's ingress), and a
                    # single object other than timeouts (the framework's object attributes,
                    # written `= {...}`: aws_s3tables_table_bucket's encryption_configuration)
                    obj = object_type(nested_block)
                    attributes[name] = {"type": {"struct": obj, "map": ["map", obj], "set": ["set", obj]}.get(
                        kind, ["list", obj]), **m}
                    continue
                mode = {"struct": "single", "map": "map", "set": "set"}.get(kind, "list")
                bt = {"nesting_mode": mode, "block": nested_block}
                if mode == "list" and readable.get(name, ("", "", ""))[2:3] == ("OutputReference",):
                    bt["max_items"] = 1
                if m.get("required") and mode in ("list", "set"):  # Terraform counts items of these only
                    bt["min_items"] = 1
                block_types[name] = bt
                continue
            attributes[name] = {"type": storage_type(kind, storage), **m}
        for name, ty in readable.items():
            if name in attributes or name in block_types:
                continue
            if isinstance(ty, tuple):  # a computed list, set or map of objects
                _, base, kind, is_set = ty
                element = object_type(self.block("", base + "OutputReference", None))
                ty = {"OutputReference": element, "Map": ["map", element]}.get(kind, ["set" if is_set else "list",
                                                                                      element])
            attributes[name] = {"type": ty, "computed": True}
        missing = set(flags) - set(attributes) - set(block_types)
        if missing:  # the TypeScript names an attribute the reading above did not find
            raise SchemaError(f"{cls}: attributes not read from the generated code: {', '.join(sorted(missing))}")
        out = {"attributes": attributes}
        if block_types:
            out["block_types"] = block_types
        return out


def read_wheel(path: Path) -> tuple[str, str, dict]:
    """(provider source address, version, schema) from one cdktf-cdktf-provider-* wheel."""
    with zipfile.ZipFile(path) as whl:
        tgz = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
        if len(tgz) != 1:
            raise SchemaError(f"{path.name}: not a cdktf provider wheel (no _jsii/*.jsii.tgz)")
        data = whl.read(tgz[0])
    resources, data_sources, provider = {}, {}, None
    source = version = None
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        assembly = json.load(tar.extractfile("package/.jsii"))
        structs = {}
        for t in assembly["types"].values():
            if t.get("datatype") and t["kind"] == "interface":
                structs[t["name"]] = {p["name"]: bool(p.get("optional")) for p in t.get("properties", [])}
        modules = {}  # lib/<name>/ -> its .js files, index.js first
        for member in tar:
            parts = member.name.split("/")
            if len(parts) >= 4 and parts[1] == "lib" and member.name.endswith(".js"):
                modules.setdefault(parts[2], []).append((parts[-1] != "index.js" or len(parts) > 4, member))
        for name, members in sorted(modules.items()):
            sources = [tar.extractfile(m).read().decode() for _, m in sorted(members, key=lambda x: (x[0], x[1].name))]
            kind = re.search(r"\nclass (\w+) extends cdktf\.(TerraformResource|TerraformDataSource|TerraformProvider) \{",
                             sources[0])
            if not kind:
                continue
            module = Module(sources, structs, f"{path.name}: lib/{name}")
            cls = kind.group(1)
            if kind.group(2) != "TerraformProvider" and cls not in module.flags:
                raise SchemaError(f"{path.name}: lib/{name}: no flags for {cls} in its TypeScript")
            body = module.classes[cls]
            synth = bodies(body, r"(synthesizeHclAttributes)\(\) \{").get("synthesizeHclAttributes", "")
            if kind.group(2) == "TerraformProvider":
                module.flags.get(cls, {}).pop("alias", None)
                block = module.block(synth, cls, cls + "Config")
                block["attributes"].pop("alias", None)  # a meta-argument, not the provider's
                meta = re.search(r"terraformProviderSource: '([^']+)'", body)
                ver = re.search(r"providerVersion: '([^']+)'", body)
                if not (meta and ver):
                    raise SchemaError(f"{path.name}: lib/{name}: no provider source or version")
                source, version = meta.group(1), ver.group(1)
                provider = block
                continue
            rtype = re.search(r"terraformResourceType: '(\w+)'", body)
            if not rtype:
                raise SchemaError(f"{path.name}: lib/{name}: no terraformResourceType")
            block = module.block(synth, cls, cls + "Config")
            (resources if kind.group(2) == "TerraformResource" else data_sources)[rtype.group(1)] = block
    if provider is None:
        raise SchemaError(f"{path.name}: no provider class found")
    # the bindings name the AWS provider "aws", the others "hashicorp/<name>"
    address = {0: f"registry.terraform.io/hashicorp/{source}", 1: f"registry.terraform.io/{source}"}.get(
        source.count("/"), source)
    return address, version, {"version": version, "provider": {"block": provider},
                               "resource_schemas": dict(sorted(resources.items())),
                               "data_source_schemas": dict(sorted(data_sources.items()))}


def build(wheels: list[Path]) -> dict:
    schemas = {}
    for path in wheels:
        address, _, schema = read_wheel(path)
        schemas[address] = schema
    return {"format_version": FORMAT, "provider_schemas": schemas}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("wheels", nargs="+", type=Path)
    p.add_argument("-o", "--output", type=Path, required=True)
    a = p.parse_args(argv)
    try:
        doc = build(a.wheels)
        tmp = a.output.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, separators=(",", ":")))
        tmp.replace(a.output)  # never half-written
    except (SchemaError, OSError, ValueError, KeyError, zipfile.BadZipFile, tarfile.TarError) as e:
        print(f"provider_schemas: {e}", file=sys.stderr)
        return 1
    for address, s in doc["provider_schemas"].items():
        print(f"{address} {s['version']}: {len(s['resource_schemas'])} resources, "
              f"{len(s['data_source_schemas'])} data sources")
    return 0


if __name__ == "__main__":
    sys.exit(main())
