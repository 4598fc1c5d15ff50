"""terraform/ec2 and terraform/emulab checked name by name against the providers' real
schemas (hashicorp/aws 6.25.0, local 2.6.1, tls 4.1.0: terraform/provider_schemas.py reads
them from the pinned cdktf wheels, `make tf-schemas`), and proof that the check catches what
it claims to: each deliberate typo below yields exactly its one finding, at its line."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "terraform"))
import provider_schemas  # noqa: E402
import schema_check  # noqa: E402

SCHEMAS = ROOT / "target" / "terraform-schemas" / "schemas.json"
AWS, LOCAL, TLS = (f"registry.terraform.io/hashicorp/{p}" for p in ("aws", "local", "tls"))


@pytest.fixture(scope="module")
def schemas():
    if not SCHEMAS.exists():
        pytest.fail(f"{SCHEMAS.relative_to(ROOT)} is missing: run `make tf-schemas` (make test does)")
    return json.loads(SCHEMAS.read_text())["provider_schemas"]


def test_the_schemas_are_the_pinned_releases_and_read_as_their_docs_say(schemas):
    assert {a: s["version"] for a, s in schemas.items()} == {AWS: "6.25.0", LOCAL: "2.6.1", TLS: "4.1.0"}
    aws = schemas[AWS]
    assert len(aws["resource_schemas"]) > 1500 and len(aws["data_source_schemas"]) > 600
    instance = aws["resource_schemas"]["aws_instance"]
    assert instance["attributes"]["ami"] == {"type": "string", "optional": True, "computed": True}
    assert instance["attributes"]["private_ip"] == {"type": "string", "optional": True, "computed": True}
    assert instance["attributes"]["instance_type"] == {"type": "string", "optional": True, "computed": True}
    assert instance["attributes"]["public_ip"] == {"type": "string", "computed": True}
    assert instance["block_types"]["timeouts"]["nesting_mode"] == "single"
    assert instance["attributes"]["vpc_security_group_ids"]["type"] == ["set", "string"]
    assert instance["attributes"]["tags"]["type"] == ["map", "string"]
    root = instance["block_types"]["root_block_device"]
    assert root["max_items"] == 1 and root["block"]["attributes"]["volume_type"]["optional"]
    assert root["block"]["attributes"]["volume_id"] == {"type": "string", "computed": True}
    assert instance["block_types"]["ebs_block_device"]["nesting_mode"] == "set"
    assert aws["resource_schemas"]["aws_subnet"]["attributes"]["vpc_id"] == {"type": "string", "required": True}
    entry = aws["resource_schemas"]["aws_ec2_managed_prefix_list"]["block_types"]["entry"]
    assert entry["nesting_mode"] == "set" and entry["block"]["attributes"]["cidr"]["required"]
    assert aws["data_source_schemas"]["aws_ec2_instance_type"]["attributes"]["default_vcpus"]["computed"]
    # the shapes a first reading of the generated code missed: computed sets (read through
    # tolist), computed maps of their own class, blocks in index-structs/, ids only where they are
    assert aws["data_source_schemas"]["aws_ec2_instance_type"]["attributes"]["boot_modes"] == {
        "type": ["set", "string"], "computed": True}
    assert aws["resource_schemas"]["aws_vpc_security_group_ingress_rule"]["attributes"]["tags_all"] == {
        "type": ["map", "string"], "computed": True}
    ami = aws["data_source_schemas"]["aws_ami"]["attributes"]
    assert ami["state_reason"]["type"] == ["map", "string"]
    assert ami["block_device_mappings"]["type"][1][1]["ebs"] == ["map", "string"]
    bucket = aws["resource_schemas"]["aws_s3tables_table_bucket"]
    assert "id" not in bucket["attributes"]
    # the framework's object attributes, written `= {...}`; timeouts stays a single block
    assert bucket["attributes"]["encryption_configuration"]["type"][0] == "object"
    assert "encryption_configuration" not in bucket.get("block_types", {})
    encoder = aws["resource_schemas"]["aws_medialive_channel"]["block_types"]["encoder_settings"]
    assert encoder["max_items"] == 1 and len(encoder["block"]["block_types"]) > 5
    # computed and written as blocks: an attribute of objects, as Terraform has it
    ingress = aws["resource_schemas"]["aws_security_group"]["attributes"]["ingress"]
    assert ingress["type"][0] == "set" and ingress["type"][1][1]["from_port"] == "number"
    assert ingress.get("optional") and ingress.get("computed")
    assert "alias" not in aws["provider"]["block"]["attributes"]
    assert "region" in aws["provider"]["block"]["attributes"] and "default_tags" in aws["provider"]["block"]["block_types"]
    assert schemas[TLS]["resource_schemas"]["tls_private_key"]["attributes"]["algorithm"]["required"]
    assert schemas[LOCAL]["resource_schemas"]["local_file"]["attributes"]["filename"]["required"]


def test_ec2_and_emulab_match_the_schemas(schemas):
    counts = {}
    for d in ("ec2", "emulab"):
        findings = schema_check.check(ROOT / "terraform" / d, schemas, counts)
        assert [str(f) for f in findings] == [], d
    # what a clean result covered (today 33, 167 and 39)
    assert counts["blocks"] >= 30 and counts["arguments"] >= 150 and counts["references"] >= 35, counts


def copy_config(tmp_path) -> Path:
    dst = tmp_path / "terraform"
    for d in ("ec2", "emulab"):
        shutil.copytree(ROOT / "terraform" / d, dst / d, ignore=shutil.ignore_patterns("*.tfstate*", ".terraform*",
                                                                                       "__pycache__"))
    return dst


# (file, the text, its typo, the finding[, another finding at the block's first line]):
# three typos the issue names first, then one of each other kind the check claims to catch.
# The finding's line is the typo's, or for a missing argument its block's first.
TYPOS = {
    "misspelt argument": ("ec2/main.tf", "  instance_type               = var.instance_type",
                          "  instance_typ                = var.instance_type",
                          'aws_instance.host: unsupported argument or block "instance_typ" (hashicorp/aws 6.25.0; '
                          'did you mean "instance_type"?)'),
    "misspelt nested block argument": ("ec2/main.tf", '    volume_type           = "gp3"',
                                       '    volume_typ            = "gp3"',
                                       'aws_instance.host.root_block_device: unsupported argument or block '
                                       '"volume_typ" (hashicorp/aws 6.25.0; did you mean "volume_type"?)'),
    "wrong attribute reference": ("ec2/outputs.tf", "public_ip  = aws_instance.host[h.name].public_ip",
                                  "public_ip  = aws_instance.host[h.name].public_ipv4",
                                  'aws_instance.host: aws_instance has no attribute "public_ipv4" '
                                  '(hashicorp/aws 6.25.0; did you mean "public_ip"?)'),
    "missing required argument": ("ec2/network.tf", "  vpc_id            = aws_vpc.this[each.key].id\n", "",
                                  'aws_subnet.public: missing required argument "vpc_id" (hashicorp/aws 6.25.0)'),
    "unknown resource type": ("ec2/security.tf", 'resource "aws_vpc_security_group_egress_rule" "all"',
                              'resource "aws_vpc_security_group_egres_rule" "all"',
                              'aws_vpc_security_group_egres_rule.all: hashicorp/aws 6.25.0 has no resource type '
                              '"aws_vpc_security_group_egres_rule"; did you mean "aws_vpc_security_group_egress_rule"?'),
    "computed attribute set": ("ec2/main.tf", "  monitoring = true\n", '  monitoring = true\n  public_dns = "x"\n',
                               'aws_instance.host: "public_dns" is computed by the provider and cannot be set '
                               '(hashicorp/aws 6.25.0)'),
    "dynamic block argument": ("ec2/security.tf", "      description = entry.key", "      descripton = entry.key",
                               'aws_ec2_managed_prefix_list.cluster.entry: unsupported argument or block "descripton" '
                               '(hashicorp/aws 6.25.0; did you mean "description"?)'),
    "self reference": ("ec2/main.tf", "length(self.locations)", "length(self.location)",
                       'self (aws_ec2_instance_type_offerings): aws_ec2_instance_type_offerings has no attribute '
                       '"location" (hashicorp/aws 6.25.0; did you mean "locations"?)'),
    "data source attribute": ("ec2/quotas.tf", "data.aws_ec2_instance_type.this[dcs[0]].default_vcpus",
                              "data.aws_ec2_instance_type.this[dcs[0]].default_vcpu",
                              'data.aws_ec2_instance_type.this: aws_ec2_instance_type has no attribute "default_vcpu" '
                              '(hashicorp/aws 6.25.0; did you mean "default_vcpus"?)'),
    "provider argument": ("ec2/providers.tf", '  region = "us-east-1"', '  regoin = "us-east-1"',
                          'provider "aws": unsupported argument or block "regoin" (hashicorp/aws 6.25.0; '
                          'did you mean "region"?)'),
    "module output": ("ec2/outputs.tf", "content         = module.inventory.known_hosts",
                      "content         = module.inventory.known_host",
                      'module "inventory" has no output "known_host"; did you mean "known_hosts"?'),
    "module variable": ("ec2/outputs.tf", "  ssh_user        = ", "  ssh_users       = ",
                        'module "inventory": inventory has no variable "ssh_users"; did you mean "ssh_user"?',
                        ("module", 'module "inventory": missing required variable "ssh_user"')),
    "attribute through a for expression": ("ec2/main.tf", "key.private_key_openssh", "key.private_key_opensh",
                                           'key (an instance of tls_private_key.host): tls_private_key has no '
                                           'attribute "private_key_opensh" (hashicorp/tls 4.1.0; did you mean '
                                           '"private_key_openssh"?)'),
    "reference in a provider block": ("ec2/providers.tf", '  region = "us-east-1"', "  region = var.aws_regoin",
                                      'reference to undeclared variable "var.aws_regoin"'),
    "undeclared variable": ("ec2/main.tf", "var.root_volume_gb", "var.root_volume_gib",
                            'reference to undeclared variable "var.root_volume_gib"; did you mean "root_volume_gb"?'),
    "terraform_data argument": ("emulab/main.tf", "  triggers_replace = local.identity",
                                "  trigger_replace  = local.identity",
                                'terraform_data.started: unsupported argument or block "trigger_replace" '
                                '(terraform.io/builtin/terraform (built in); did you mean "triggers_replace"?)'),
}


def line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


@pytest.mark.parametrize("kind", TYPOS)
def test_each_typo_gives_its_finding_at_its_line(schemas, tmp_path, kind):
    file, text, typo, finding, *also = TYPOS[kind]
    root = copy_config(tmp_path)
    path = root / file
    src = path.read_text()
    assert src.count(text) == 1, f"{file} changed: the test's text {text!r} is not there once"
    mutated = src.replace(text, typo)
    path.write_text(mutated)

    def block_line(kind):  # the first line of the `kind "..." {` block around the text
        padded = "\n" + src
        return padded.count("\n", 0, padded.rfind(f"\n{kind} ", 0, padded.index(text)) + 1)

    line = line_of(mutated, typo.strip().split("\n")[-1]) if typo else block_line("resource")
    expected = [(file, line, finding)] + [(file, block_line(kind), extra) for kind, extra in also]
    got = schema_check.check(root / file.split("/")[0], schemas)
    assert sorted((f.file.relative_to(root).as_posix(), f.line, f.text) for f in got) == sorted(expected)


def test_the_command_prints_file_and_line_and_fails(schemas, tmp_path):
    root = copy_config(tmp_path)
    main = root / "ec2" / "main.tf"
    main.write_text(main.read_text().replace('algorithm = "ED25519"', 'algoritm = "ED25519"'))
    r = subprocess.run([sys.executable, str(ROOT / "terraform" / "schema_check.py"), "--schemas", str(SCHEMAS),
                        str(root / "ec2"), str(root / "emulab")], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    text = main.read_text()
    block, line = line_of(text, 'resource "tls_private_key" "host"'), line_of(text, 'algoritm = "ED25519"')
    assert r.stdout.splitlines() == [
        f'{main}:{block}: tls_private_key.host: missing required argument "algorithm" (hashicorp/tls 4.1.0)',
        f'{main}:{line}: tls_private_key.host: unsupported argument or block "algoritm" '
        f'(hashicorp/tls 4.1.0; did you mean "algorithm"?)']
    assert r.stderr.startswith("schema_check: 2 findings in ")
    clean = subprocess.run([sys.executable, str(ROOT / "terraform" / "schema_check.py"), "--schemas", str(SCHEMAS),
                            str(ROOT / "terraform" / "ec2")], capture_output=True, text=True)
    assert clean.returncode == 0 and clean.stdout == "", clean.stdout + clean.stderr


def test_missing_schemas_or_a_wrong_wheel_say_what_to_do(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "terraform" / "schema_check.py"), "--schemas",
                        str(tmp_path / "none.json"), str(ROOT / "terraform" / "ec2")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr == f"schema_check: {tmp_path}/none.json is missing: run `make tf-schemas`\n"
    wheel = tmp_path / "not_a_provider-1.0-py3-none-any.whl"
    import zipfile
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("not_a_provider/__init__.py", "")
    out = tmp_path / "schemas.json"
    r = subprocess.run([sys.executable, str(ROOT / "terraform" / "provider_schemas.py"), str(wheel), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and not out.exists()
    assert r.stderr == f"provider_schemas: {wheel.name}: not a cdktf provider wheel (no _jsii/*.jsii.tgz)\n"


def test_the_javascript_reader_skips_braces_in_strings_and_comments():
    src = 'x { a = "}"; b = `{${c}}`; // }\n /* { */ d = \'{\' }'
    assert provider_schemas.matching_brace(src, src.index("{")) == len(src)
    with pytest.raises(provider_schemas.SchemaError):
        provider_schemas.matching_brace("{ {", 0)


SYNTHETIC = '''terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "6.25.0"
    }
  }
}

provider "aws" {
  region  = "us-east-1"
  version = "6.25.0"
}

variable "n" {
  description = "Mentions aws_instance.hosts and var.nothing in prose, which is not an expression."
  type        = number
}

resource "aws_security_group" "g" {
  name = "g"
  ingress {
    from_port   = 22
    to_port     = 22
    protocl     = "tcp"
    cidr_blocks = ["203.0.113.7/32"]
  }
  egress = []
  tags {
    Name = "g"
  }
}

data "aws_ami" "a" {
  filter {
    name   = "name"
    values = ["x"]
  }
  filter {
    name = "virtualization-type"
  }
}

resource "aws_instance" "h" {
  count                  = var.n
  ami                    = data.aws_ami.a.id
  vpc_security_group_ids = [aws_security_group.g.idd]
  root_block_device {
    encrypted = true
  }
  encrypted = true
}

output "splat" {
  value = aws_instance.h.*.public_ipz
}

output "again" {
  value = [aws_security_group.g.idd, aws_security_group.g.idd]
}
'''


def test_what_a_configuration_may_write_and_where_each_finding_is(schemas, tmp_path):
    """Blocks written for attributes of objects (and their fields checked), `= []` for them,
    prose left alone, a provider's meta-arguments, a legacy splat, a finding in the second of
    two like blocks, an argument beside a block that has one of that name, and a repeated
    wrong reference each at its own place."""
    (tmp_path / "main.tf").write_text(SYNTHETIC)
    lines = SYNTHETIC.split("\n")

    def at(text, nth=0):
        return [i + 1 for i, line in enumerate(lines) if text in line][nth]

    got = [(f.line, f.text) for f in schema_check.check(tmp_path, schemas)]
    aws = "(hashicorp/aws 6.25.0"
    assert got == sorted([
        (at("protocl"), f'aws_security_group.g.ingress: unsupported argument "protocl" {aws}; did you mean "protocol"?)'),
        (at("tags {"), f'aws_security_group.g: "tags" is an argument, written as a block {aws})'),
        (at("filter {", 1), f'data.aws_ami.a.filter: missing required argument "values" {aws})'),
        (at("aws_security_group.g.idd"), f'aws_security_group.g: aws_security_group has no attribute "idd" {aws}; '
                                         'did you mean "id"?)'),
        (at("  encrypted = true", 1), f'aws_instance.h: unsupported argument or block "encrypted" {aws})'),
        (at("public_ipz"), f'aws_instance.h: aws_instance has no attribute "public_ipz" {aws}; did you mean "public_ip"?)'),
        (at("aws_security_group.g.idd", 1), f'aws_security_group.g: aws_security_group has no attribute "idd" {aws}; '
                                            'did you mean "id"?)'),
    ]), got


def test_bad_input_is_one_line(schemas, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "main.tf").write_text('resource "aws_vpc" "v" {\n  cidr_block = \n}\n')
    empty = tmp_path / "empty"
    empty.mkdir()
    for d, message in ((broken, f"schema_check: {broken}/main.tf: cannot parse it as HCL: "),
                       (empty, f"schema_check: {empty}: no .tf files: not a Terraform configuration\n")):
        r = subprocess.run([sys.executable, str(ROOT / "terraform" / "schema_check.py"), "--schemas", str(SCHEMAS),
                            str(d)], capture_output=True, text=True)
        assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith(message), r.stderr
        assert r.stderr.count("\n") == 1, r.stderr


SYNTHETIC_2 = '''terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}

variable "l" {
  type = list(object({ name = string }))
}

resource "aws_vpc" "v" {
  cidr_block = "10.0.0.0/16"
}

output "urls" {
  value = ["https://${aws_vpc.v.idd}/x", "#cloud-config ${aws_vpc.v.idd}", "$${aws_vpc.v.idd} is text"]
}
output "scoped" { value = concat([for v in [aws_vpc.v] : v.id], [for v in var.l : v.name]) }
output "next" { value = aws_vpc.v.arnn }

module "a" {
  source = "./mod"
  x      = 1
}

module "b" {
  source = "./mod"
  xx     = 1
}
'''


def test_strings_one_line_blocks_for_scopes_and_a_module_called_twice(schemas, tmp_path):
    """A reference after '//' or '#' inside a string is found at its own line, `$${` is text,
    a `for` value variable ends with its brackets, a one-line block's finding stays in it,
    and a second call of the same module is checked too."""
    (tmp_path / "main.tf").write_text(SYNTHETIC_2)
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "main.tf").write_text('variable "x" {\n  type = number\n}\n')
    lines = SYNTHETIC_2.split("\n")

    def at(text):
        return next(i + 1 for i, line in enumerate(lines) if text in line)

    got = [(f.line, f.text) for f in schema_check.check(tmp_path, schemas)]
    aws = "(hashicorp/aws 6.25.0"
    assert got == sorted([
        (at('"https://'), f'aws_vpc.v: aws_vpc has no attribute "idd" {aws}; did you mean "id"?)'),
        (at('output "next"'), f'aws_vpc.v: aws_vpc has no attribute "arnn" {aws}; did you mean "arn"?)'),
        (at('module "b"'), 'module "b": missing required variable "x"'),
        (at("xx     = 1"), 'module "b": mod has no variable "xx"; did you mean "x"?'),
    ]), got
