"""A stand-in Terraform provider that serves one real provider's schema and nothing more.

The AWS, local and TLS providers cannot be downloaded here, so `terraform init` would stop
before `validate` or `terraform test` could run. This plugin, built on the `tf` library
(the Terraform plugin protocol in Python), answers as one of them with the schema
provider_schemas.py read from the pinned release (`make tf-schemas`): Terraform checks a
configuration's names, types, required arguments and single blocks against it as it would
against the real plugin (not what the schemas leave out: provider_schemas.py says what), and
`terraform test` runs with `mock_provider` blocks,
which take the schema from the plugin and invent every computed value. Creating, reading or
deleting anything fails with a diagnostic saying this is a stand-in.

`python3 terraform/standin_provider.py install --schemas FILE --mirror DIR` writes, for each
provider in FILE, an executable into DIR in the unpacked layout of a filesystem mirror, and
DIR/terraformrc, a CLI configuration that installs those providers from DIR and nothing
else (TF_CLI_CONFIG_FILE=DIR/terraformrc). Terraform then runs each executable, which serves
`serve --schemas FILE --provider ADDRESS`.
"""
import argparse
import json
import os
import platform
import shlex
import sys
from pathlib import Path

from tf import iface, types
from tf import schema as s
from tf.gen import tfplugin_pb2 as pb
from tf.provider import ProviderServicer
from tf.runner import run_provider

STANDIN = "k2bench stand-in provider: serves the schema only"
MODES = {"list": pb.Schema.NestedBlock.NestingMode.LIST, "set": pb.Schema.NestedBlock.NestingMode.SET,
         "single": pb.Schema.NestedBlock.NestingMode.SINGLE, "map": pb.Schema.NestedBlock.NestingMode.MAP}


class Cty(types.String):
    """A type whose wire form is the schema's cty type as it is (the tf library spells
    string, number, bool, list and set only; the schemas have maps, objects, dynamic)."""

    def __init__(self, type_json):
        self.wire = json.dumps(type_json).encode()

    def tf_type(self) -> bytes:
        return self.wire


class Nested(s.NestedBlock):
    """A nested block in any nesting mode (the tf library's knows set and single only; most of
    the AWS provider's blocks are lists)."""

    def __init__(self, name: str, mode: str, inner: s.Schema, min_items=None, max_items=None):
        super().__init__(name, s.NestMode.Set, s.Block(attributes=inner.attributes, block_types=inner.block_types),
                         min_items=min_items, max_items=max_items)
        self.mode = mode

    def to_pb(self):
        return pb.Schema.NestedBlock(type_name=self.type_name, block=self.block.to_pb(), min_items=self.min_items,
                                     max_items=self.max_items, nesting=MODES[self.mode])

    def encode(self, value):
        return value

    def decode(self, value):
        return value

    def semantically_equal(self, a, b):
        return a == b


def block(spec: dict) -> s.Schema:
    attributes = [s.Attribute(name, Cty(a["type"]), required=a.get("required", False),
                              optional=a.get("optional", False), computed=a.get("computed", False))
                  for name, a in spec.get("attributes", {}).items()]
    nested = [Nested(name, bt["nesting_mode"], block(bt["block"]), bt.get("min_items"), bt.get("max_items"))
              for name, bt in spec.get("block_types", {}).items()]
    return s.Schema(attributes=attributes, block_types=nested)


def servable(spec: dict, in_set: bool = False) -> bool:
    """False for a schema Terraform would refuse: an attribute of any type (the bindings' stand-in
    for a block nested too deep to spell out, aws_wafv2_web_acl's rule.statement) in a set of
    blocks. Those few types are left out of the stand-in: a configuration using one is told the
    provider lacks it."""
    if in_set and any("dynamic" in json.dumps(a["type"]) for a in spec.get("attributes", {}).values()):
        return False
    return all(servable(bt["block"], in_set or bt["nesting_mode"] == "set")
               for bt in spec.get("block_types", {}).values())


def provider_for(schemas: dict, address: str):
    spec = schemas[address]

    def kind(type_name: str, data: bool, schema_spec: dict):
        def not_here(self, ctx, *args):
            ctx.diagnostics.add_error(f"{STANDIN}", f"{type_name} cannot be read, created, changed or deleted "
                                                    "here; run against a real account (terraform/README.md)")

        members = {"get_name": classmethod(lambda cls: type_name), "__init__": lambda self, provider: None,
                   "get_schema": classmethod(lambda cls: block(schema_spec)), "read": not_here}
        if not data:
            members.update(create=not_here, update=not_here, delete=not_here)
        return type(type_name, (iface.DataSource if data else iface.Resource,), members)

    class StandIn(iface.Provider):
        def __init__(self):
            self.resources = [kind(t, False, b) for t, b in spec["resource_schemas"].items() if servable(b)]
            self.data_sources = [kind(t, True, b) for t, b in spec["data_source_schemas"].items() if servable(b)]

        def get_model_prefix(self) -> str:
            return ""

        def full_name(self) -> str:
            return address

        def get_provider_schema(self, diags):
            return block(spec["provider"]["block"])

        def validate_config(self, diags, config):
            pass

        def configure_provider(self, diags, config):
            pass

        def get_data_sources(self):
            return self.data_sources

        def get_resources(self):
            return self.resources

    return StandIn()


def platform_dir() -> str:
    """This machine's platform as Terraform names it (a mirror's unpacked layout is per platform)."""
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower(),
                                                                                            platform.machine().lower())
    return f"{sys.platform.removesuffix('2')}_{arch}"  # linux, darwin


def schema_response(schemas: dict, address: str) -> bytes:
    """The provider's answer to GetProviderSchema, serialized: built once at install, since
    Terraform starts a plugin several times per command and building it is most of a start."""
    return ProviderServicer(provider_for(schemas, address)).GetProviderSchema(None, None).SerializeToString()


def install(schemas_path: Path, mirror: Path) -> list[Path]:
    """The mirror's executables (unpacked layout) and its terraformrc; returns the executables."""
    schemas = json.loads(schemas_path.read_text())["provider_schemas"]
    made = []
    for address, spec in schemas.items():
        host, namespace, name = address.split("/")
        target = mirror / host / namespace / name / spec["version"] / platform_dir()
        target.mkdir(parents=True, exist_ok=True)
        exe = target / f"terraform-provider-{name}_v{spec['version']}"
        response = mirror / f"{name}-{spec['version']}.schema.pb"  # outside the package: not hashed by init
        response.write_bytes(schema_response(schemas, address))
        q = lambda p: shlex.quote(str(Path(p).resolve()))  # noqa: E731
        exe.write_text("#!/bin/sh\n# written by terraform/standin_provider.py install\n"
                       f"exec {shlex.quote(sys.executable)} {q(__file__)} serve --schemas {q(schemas_path)} "
                       f"--provider {shlex.quote(address)} --response {q(response)}\n")
        exe.chmod(0o755)
        made.append(exe)
    includes = ", ".join(json.dumps(a) for a in schemas)
    (mirror / "terraformrc").write_text(
        "# written by terraform/standin_provider.py install: these providers from the stand-ins here, no others\n"
        f'provider_installation {{\n  filesystem_mirror {{\n    path    = {json.dumps(str(mirror.resolve()))}\n'
        f"    include = [{includes}]\n  }}\n}}\n")
    return made


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("install")
    i.add_argument("--schemas", type=Path, required=True)
    i.add_argument("--mirror", type=Path, required=True)
    s = sub.add_parser("serve")
    s.add_argument("--schemas", type=Path, required=True)
    s.add_argument("--provider", required=True)
    s.add_argument("--response", type=Path, help="the GetProviderSchema answer install wrote")
    a = p.parse_args(argv)
    for path in (a.schemas, getattr(a, "response", None)):
        if path and not path.exists():
            print(f"standin_provider: {path} is missing: run `make tf-schemas`, then install again", file=sys.stderr)
            return 1
    if a.command == "install":
        for exe in install(a.schemas, a.mirror):
            print(exe)
        return 0
    schemas = json.loads(a.schemas.read_text())["provider_schemas"]
    if a.provider not in schemas:
        print(f"standin_provider: no schema for {a.provider} in {a.schemas}", file=sys.stderr)
        return 1
    if a.response:
        answer = pb.GetProviderSchema.Response.FromString(a.response.read_bytes())
        ProviderServicer.GetProviderSchema = lambda self, request, context: answer  # the same, prebuilt
    run_provider(provider_for(schemas, a.provider), [sys.argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
