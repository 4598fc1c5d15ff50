"""Terraform for EC2 and Emulab.

Provider plugins cannot be downloaded here, so the configurations are checked by parsing
them (python-hcl2) and asserting their structure, by `terraform fmt`, by checkov, by
running Terraform itself on the parts that need no provider (the variables' validations,
the inventory module), and by `terraform init`, `validate` and `terraform test` against
stand-in plugins that serve the real providers' schemas (terraform/standin_provider.py;
tests/test_terraform_schema.py checks the names). Terraform is the pinned release that
`make tf-tools` builds (make test does).
"""
import datetime
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from k2bench.deploy import inventory as k2inventory

ROOT = pathlib.Path(__file__).resolve().parent.parent
TF = ROOT / "terraform"
EC2 = TF / "ec2"
EMULAB = TF / "emulab"
FIXTURES = ROOT / "tests" / "fixtures" / "terraform"

# Scan tools live in their own virtualenv; K2BENCH_CHECKOV points elsewhere while developing.
CHECKOV = pathlib.Path(os.environ.get("K2BENCH_CHECKOV") or ROOT / ".venv-lint" / "bin" / "checkov")
CHECKOV_INSTALL = "python3 -m venv .venv-lint && .venv-lint/bin/pip install checkov==3.3.30"

# The pinned Terraform `make tf-tools` builds (the Makefile says why 1.8.5); K2BENCH_TERRAFORM
# points elsewhere while developing.
TERRAFORM_VERSION = re.search(r"^TERRAFORM_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
TERRAFORM = pathlib.Path(os.environ.get("K2BENCH_TERRAFORM") or
                         ROOT / "target" / "tools" / f"terraform-{TERRAFORM_VERSION}")
SCHEMAS = ROOT / "target" / "terraform-schemas" / "schemas.json"

# The paper's six regions (docs/clusters.md).
SPEC_REGIONS = {"VA": "us-east-1", "CA": "us-west-1", "SP": "sa-east-1", "LDN": "eu-west-2",
                "TYO": "ap-northeast-1", "SG": "ap-southeast-1"}

EVERYWHERE = ("0.0.0.0/0", "::/0")


# ---- parsing ---------------------------------------------------------------------------


def hcl(directory):
    """The .tf files of a directory merged: {"resource": {type: {name: body}}, "variable": {...}, ...}."""
    try:
        import hcl2
    except ImportError:
        pytest.fail("python-hcl2 is missing from this virtualenv: add python-hcl2==8.1.4 to requirements.txt")
    options = hcl2.SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
    merged = {"resource": {}, "data": {}, "variable": {}, "output": {}, "module": {}, "locals": {},
              "provider": {}, "terraform": []}
    for path in sorted(directory.glob("*.tf")):
        doc = hcl2.loads(path.read_text(), serialization_options=options)
        for kind in ("resource", "data"):
            for block in doc.get(kind, []):
                for rtype, named in block.items():
                    merged[kind].setdefault(rtype, {}).update(named)
        for kind in ("variable", "output", "module", "provider"):
            for block in doc.get(kind, []):
                merged[kind].update(block)
        for block in doc.get("locals", []):
            merged["locals"].update(block)
        merged["terraform"] += doc.get("terraform", [])
    return merged


@pytest.fixture(scope="module")
def ec2():
    return hcl(EC2)


@pytest.fixture(scope="module")
def emulab():
    return hcl(EMULAB)


def resources(doc, rtype):
    return doc["resource"].get(rtype, {})


def strings(value):
    """Every string inside a parsed value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


# ---- EC2: structure --------------------------------------------------------------------


def test_ec2_datacenters_are_the_six_regions_of_the_spec(ec2):
    assert ec2["variable"]["datacenters"]["default"] == SPEC_REGIONS


# for_each of a regional block => the region it must name.
REGION_OF = {
    "${var.datacenters}": "${each.value}",
    "${var.security_group_rule_quota == null ? var.datacenters : {}}": "${each.value}",
    "${var.vcpu_quota == null && local.standard_instance_family ? var.datacenters : {}}": "${each.value}",
    "${local.hosts}": "${each.value.region}",
    "${local.prefix_lists}": "${each.value.region}",
}


def test_ec2_one_aws_provider_every_regional_block_names_its_region(ec2):
    # AWS provider 6: a resource's own `region`; no aliases, so for_each covers the regions.
    assert "alias" not in ec2["provider"]["aws"]
    blocks = [(kind, t, n, body) for kind in ("resource", "data") for t, named in ec2[kind].items()
              if t.startswith("aws_") for n, body in named.items()]
    assert len(blocks) >= 19
    for kind, rtype, name, body in blocks:
        where = f"{kind} {rtype}.{name}"
        if (kind, rtype) == ("data", "aws_pricing_product"):
            # Global to the provider (no `region`): asked through the provider's region,
            # us-east-1, where the Price List API answers; the region priced is a filter.
            assert body["for_each"] == "${var.price_estimate ? var.datacenters : {}}", where
            assert "region" not in body, where
            assert ec2["provider"]["aws"]["region"] == "us-east-1"
            continue
        assert body.get("for_each") in REGION_OF, where
        assert body.get("region") == REGION_OF[body["for_each"]], where


@pytest.mark.parametrize("rtype", [
    "aws_vpc", "aws_subnet", "aws_internet_gateway", "aws_route_table", "aws_route",
    "aws_route_table_association", "aws_security_group", "aws_default_security_group",
    "aws_key_pair",
])
def test_ec2_per_datacenter_network(ec2, rtype):
    named = resources(ec2, rtype)
    assert named, f"no {rtype}"
    assert all(body["for_each"] == "${var.datacenters}" for body in named.values())


def test_ec2_internet_route_and_public_addresses(ec2):
    (route,) = resources(ec2, "aws_route").values()
    assert route["destination_cidr_block"] == "0.0.0.0/0"
    assert route["gateway_id"] == "${aws_internet_gateway.this[each.key].id}"
    (subnet,) = resources(ec2, "aws_subnet").values()
    assert subnet["vpc_id"] == "${aws_vpc.this[each.key].id}"
    (host,) = resources(ec2, "aws_instance").values()
    assert host["associate_public_ip_address"] is True
    assert host["subnet_id"] == "${aws_subnet.public[each.value.dc].id}"
    assert host["vpc_security_group_ids"] == ["${aws_security_group.cluster[each.value.dc].id}"]


def test_ec2_instances(ec2):
    (host,) = resources(ec2, "aws_instance").values()
    assert host["for_each"] == "${local.hosts}"
    assert host["instance_type"] == "${var.instance_type}"
    assert host["ami"] == "${data.aws_ami.ubuntu[each.value.dc].id}"
    assert host["key_name"] == "${aws_key_pair.operator[each.value.dc].key_name}"
    assert host["metadata_options"][0]["http_tokens"] == "required"
    assert host["root_block_device"][0]["encrypted"] is True
    variables = ec2["variable"]
    # The shipped experiments (workloads/*.yaml) all use servers_per_dc 2.
    assert variables["servers_per_dc"]["default"] == 2
    assert variables["clients_per_dc"]["default"] == 2
    assert variables["instance_type"]["default"] == "c5.2xlarge"
    host_list = ec2["locals"]["host_list"]
    assert "var.servers_per_dc" in host_list and "var.clients_per_dc" in host_list
    (key,) = resources(ec2, "aws_key_pair").values()
    assert "var.ssh_public_key" in key["public_key"]


def test_ec2_ubuntu_2204_from_canonical_in_each_region(ec2):
    ami = ec2["data"]["aws_ami"]["ubuntu"]
    assert ami["for_each"] == "${var.datacenters}" and ami["most_recent"] is True
    assert ami["owners"] == ["099720109477"]  # Canonical
    names = [f["values"] for f in ami["filter"] if f["name"] == "name"]
    assert names == [["ubuntu/images/*/ubuntu-jammy-22.04-amd64-server-*"]]


def ingress_rules(doc):
    rules = dict(resources(doc, "aws_vpc_security_group_ingress_rule"))
    # The legacy rule resource and inline blocks would escape the checks below: none exist.
    assert "aws_security_group_rule" not in doc["resource"]
    for name, sg in resources(doc, "aws_security_group").items():
        assert "ingress" not in sg and "egress" not in sg, f"aws_security_group.{name} has inline rules"
    return rules


CLUSTER_PREFIX_LIST = "${aws_ec2_managed_prefix_list.cluster[each.key].id}"
VPC_CIDR = "${aws_vpc.this[each.key].cidr_block}"


def test_ec2_ingress_only_operator_ssh_and_cluster_ports(ec2):
    rules = ingress_rules(ec2)
    assert len(rules) == 5
    seen = set()
    for name, rule in rules.items():
        where = f"aws_vpc_security_group_ingress_rule.{name}"
        if rule.get("prefix_list_id"):
            # One rule per prefix list of the cluster, in that list's datacenter's group.
            assert rule["for_each"] == "${local.prefix_lists}", where
            assert rule["security_group_id"] == "${aws_security_group.cluster[each.value.dc].id}", where
        else:
            assert rule["for_each"] == "${var.datacenters}", where
            assert rule["security_group_id"] == "${aws_security_group.cluster[each.key].id}", where
        sources = {k: rule[k] for k in ("cidr_ipv4", "cidr_ipv6", "prefix_list_id",
                                        "referenced_security_group_id") if k in rule}
        assert len(sources) == 1, f"{where}: one source, got {sources}"
        ((kind, source),) = sources.items()
        assert not any(e in source for e in EVERYWHERE), f"{where}: from everywhere"
        ports = (rule["ip_protocol"], rule.get("from_port"), rule.get("to_port"))
        if source == "${var.operator_cidr}":
            assert (kind, ports) == ("cidr_ipv4", ("tcp", 22, 22)), f"{where}: operator gets SSH only"
            seen.add("ssh")
        else:
            assert source in (CLUSTER_PREFIX_LIST, VPC_CIDR), f"{where}: source {source}"
            assert ports in (("tcp", "${var.server_ports.from}", "${var.server_ports.to}"),
                             ("icmp", 8, 0)), f"{where}: ports {ports}"
            seen.add((source, ports[0]))
        assert rule.get("description"), where
    assert seen == {"ssh", (CLUSTER_PREFIX_LIST, "tcp"), (CLUSTER_PREFIX_LIST, "icmp"),
                    (VPC_CIDR, "tcp"), (VPC_CIDR, "icmp")}


def test_ec2_server_ports_cannot_cover_ssh(ec2):
    var = ec2["variable"]["server_ports"]
    assert var["default"] == {"from": 17000, "to": 17999}
    assert "var.server_ports.from >= 1024" in var["validation"][0]["condition"]


def test_ec2_cluster_prefix_lists_hold_every_instances_public_address(ec2):
    (pl,) = resources(ec2, "aws_ec2_managed_prefix_list").values()
    # One list per chunk of at most 100 machines, in every datacenter (local.prefix_lists;
    # the chunking itself is evaluated by test_ec2_cluster_shape_rules_and_prefix_lists).
    assert pl["for_each"] == "${local.prefix_lists}" and pl["region"] == "${each.value.region}"
    assert pl["address_family"] == "IPv4"
    assert pl["max_entries"] == "${each.value.max_entries}"
    (entry,) = pl["dynamic"]
    assert entry["entry"]["for_each"] == "${toset(each.value.hosts)}"
    assert entry["entry"]["content"][0]["cidr"] == "${aws_instance.host[entry.key].public_ip}/32"
    assert "each.value.index" in pl["name"]
    locals_ = ec2["locals"]
    assert locals_["prefix_list_max_entries"] == 100
    assert locals_["cluster_chunks"] == "${chunklist([for h in local.host_list : h.name], local.prefix_list_max_entries)}"


def test_ec2_everywhere_appears_only_in_the_default_route_and_egress(ec2):
    allowed = {("aws_route", "internet"), ("aws_vpc_security_group_egress_rule", "all")}
    for rtype, named in ec2["resource"].items():
        for name, body in named.items():
            if any(e in s for s in strings(body) for e in EVERYWHERE):
                assert (rtype, name) in allowed, f"{rtype}.{name} mentions 0.0.0.0/0 or ::/0"


def test_ec2_egress_is_all_with_a_reason(ec2):
    (egress,) = resources(ec2, "aws_vpc_security_group_egress_rule").values()
    assert (egress["cidr_ipv4"], egress["ip_protocol"]) == ("0.0.0.0/0", "-1")
    text = (EC2 / "security.tf").read_text()
    before = text[:text.index('resource "aws_vpc_security_group_egress_rule"')].rstrip().splitlines()
    assert before[-1].startswith("#") and "Egress" in "\n".join(before[-4:])


def test_ec2_operator_cidr_refuses_everywhere(ec2):
    conditions = " ".join(v["condition"] for v in ec2["variable"]["operator_cidr"]["validation"])
    assert "cidrnetmask(var.operator_cidr)" in conditions  # IPv4 only: ::/0 cannot pass
    assert ">= 8" in conditions  # 0.0.0.0/0 cannot pass (and see the terraform plan tests below)


UNTAGGABLE = {"aws_route", "aws_route_table_association"}


def test_ec2_everything_is_tagged_with_the_experiment_id(ec2):
    assert ec2["locals"]["tags"]["experiment_id"] == "${var.experiment_id}"
    for rtype, named in ec2["resource"].items():
        if not rtype.startswith("aws_") or rtype in UNTAGGABLE:
            continue
        for name, body in named.items():
            assert body.get("tags", "").startswith("${merge(local.tags,"), f"{rtype}.{name}"
    (host,) = resources(ec2, "aws_instance").values()
    assert host["root_block_device"][0]["tags"].startswith("${merge(local.tags,")


def test_ec2_inventory_output_and_file(ec2):
    assert ec2["output"]["inventory"]["value"] == "${module.inventory.json}"
    local_file = resources(ec2, "local_file")["inventory"]
    assert local_file["filename"] == "${path.module}/inventory.json"
    assert local_file["content"] == "${module.inventory.json}"
    # Never an inventory without the known_hosts file it names.
    assert local_file["depends_on"] == ["${local_file.known_hosts}"]
    module = ec2["module"]["inventory"]
    assert module["source"] == "./modules/inventory"
    assert module["ssh_user"] == "ubuntu"
    assert module["known_hosts"] == "known_hosts"
    hosts = module["hosts"]
    assert "aws_instance.host[h.name].public_ip" in hosts and "aws_instance.host[h.name].private_ip" in hosts
    assert "tls_private_key.host[h.name].public_key_openssh" in hosts


def test_ec2_host_keys_from_terraform_into_cloud_init_and_known_hosts(ec2):
    key = resources(ec2, "tls_private_key")["host"]
    assert (key["for_each"], key["algorithm"]) == ("${local.hosts}", "ED25519")
    cloud_init = ec2["module"]["cloud_init"]
    assert cloud_init["source"] == "./modules/cloud-init"
    assert "key.private_key_openssh" in cloud_init["host_keys"] and "tls_private_key.host" in cloud_init["host_keys"]
    assert cloud_init["deadline"] == "${local.deadline}"
    (host,) = resources(ec2, "aws_instance").values()
    assert host["user_data"] == "${module.cloud_init.user_data[each.key]}"
    known_hosts = resources(ec2, "local_file")["known_hosts"]
    assert known_hosts["filename"] == "${path.module}/known_hosts"
    assert known_hosts["content"] == "${module.inventory.known_hosts}"
    ignored = (TF / ".gitignore").read_text().splitlines()
    for name in ("known_hosts", "inventory.json", "*.tfstate", "*.tfstate.*"):
        assert name in ignored, name


def test_ec2_instances_terminate_themselves_at_the_deadline(ec2):
    (host,) = resources(ec2, "aws_instance").values()
    assert host["instance_initiated_shutdown_behavior"] == "terminate"
    assert host["tags"].count("local.deadline") == 1  # ec2_status.py reads the tag
    deadline = resources(ec2, "terraform_data")["deadline"]
    assert deadline["input"] == '${timeadd(plantimestamp(), "${local.max_minutes}m")}'
    assert deadline["lifecycle"][0]["ignore_changes"] == ["input"]
    assert ec2["variable"]["max_hours"]["default"] == 4
    assert ec2["output"]["deadline"]["value"] == "${local.deadline}"


def test_ec2_quota_data_sources(ec2):
    quotas = ec2["data"]["aws_servicequotas_service_quota"]
    assert (quotas["security_group_rules"]["service_code"], quotas["security_group_rules"]["quota_code"]) == \
        ("vpc", "L-0EA8095F")
    assert (quotas["standard_vcpus"]["service_code"], quotas["standard_vcpus"]["quota_code"]) == \
        ("ec2", "L-1216C47A")
    itype = ec2["data"]["aws_ec2_instance_type"]["this"]
    assert itype["instance_type"] == "${var.instance_type}"
    inputs = ec2["locals"]["quota_inputs"]
    assert "data.aws_servicequotas_service_quota.security_group_rules[dcs[0]].value" in inputs
    assert "data.aws_servicequotas_service_quota.standard_vcpus[dcs[0]].value" in inputs
    assert "data.aws_ec2_instance_type.this[dcs[0]].default_vcpus" in inputs
    # Nothing is created before the checks: everything hangs off the VPCs.
    (vpc,) = resources(ec2, "aws_vpc").values()
    assert set(vpc["depends_on"]) == {"${terraform_data.quota_check}", "${terraform_data.deadline_check}"}


def test_ec2_price_list_filters_select_linux_on_demand_shared(ec2):
    pricing = ec2["data"]["aws_pricing_product"]["instance"]
    assert pricing["service_code"] == "AmazonEC2"
    filters = {f["field"]: f["value"] for f in pricing["filters"]}
    assert filters == {"instanceType": "${var.instance_type}", "regionCode": "${each.value}",
                       "operatingSystem": "Linux", "preInstalledSw": "NA", "licenseModel": "No License required",
                       "tenancy": "Shared", "capacitystatus": "Used", "marketoption": "OnDemand",
                       "operation": "RunInstances"}
    assert ec2["locals"]["price_results"] == \
        "${{for dc, product in data.aws_pricing_product.instance : dc => product.result}}"


def test_versions_are_pinned(ec2, emulab):
    """Exactly the provider releases whose schemas the offline checks read, so that what
    ec2-up installs is what was checked."""
    (block,) = emulab["terraform"]  # Emulab needs no provider: only built-in terraform_data
    assert block == {"required_version": ">= 1.5"}
    wheels = (TF / "provider-schemas.txt").read_text()
    checked = {"aws": "6.25.0", "local": "2.6.1", "tls": "4.1.0"}
    assert "hashicorp/aws 6.25.0, hashicorp/local 2.6.1, hashicorp/tls 4.1.0" in " ".join(wheels.split())
    (block,) = ec2["terraform"]
    assert block["required_version"] == ">= 1.5"
    (required,) = block["required_providers"]
    assert {name: (p["source"], p["version"]) for name, p in required.items()} == {
        name: (f"hashicorp/{name}", version) for name, version in checked.items()}
    if SCHEMAS.exists():
        built = json.loads(SCHEMAS.read_text())["provider_schemas"]
        assert {a.rsplit("/", 1)[1]: s["version"] for a, s in built.items()} == checked


@pytest.mark.parametrize("directory", [EC2, EMULAB], ids=["ec2", "emulab"])
def test_every_variable_is_described_and_validated(directory):
    for name, var in hcl(directory)["variable"].items():
        assert var.get("description"), f"{directory.name}: variable {name} has no description"
        validations = var.get("validation", [])
        assert validations, f"{directory.name}: variable {name} has no validation"
        for v in validations:
            assert v["error_message"].startswith(f"{name}: "), f"{name}: message should name the field"


def test_ec2_required_variables(ec2):
    required = sorted(n for n, v in ec2["variable"].items() if "default" not in v)
    assert required == ["experiment_id", "operator_cidr", "ssh_public_key"]
    assert "regex(" in ec2["variable"]["experiment_id"]["validation"][0]["condition"]


def test_checkov_skips_give_reasons():
    for path in TF.rglob("*.tf"):
        for m in re.finditer(r"#checkov:skip=([A-Z0-9_]+)(?::(.*))?", path.read_text()):
            assert m.group(2) and len(m.group(2)) > 40, f"{path.name}: {m.group(1)} skipped without a reason"


# ---- Emulab: structure -----------------------------------------------------------------


def provisioners_of(resource):
    return [next(iter(p.values())) for p in resource["provisioner"]]


def test_emulab_experiment_is_created_and_terminated_through_portal_py(emulab):
    data = resources(emulab, "terraform_data")
    assert set(data) == {"started", "experiment", "ready", "lifetime"}
    commands = {name: [(p["command"], p.get("when")) for p in provisioners_of(r)]
                for name, r in data.items() if name != "started"}
    assert commands == {"experiment": [("start", None), ("terminate", "destroy")],
                        "ready": [("wait", None), ("inventory", None), ("${jsonencode(self.input.files)}", "destroy")],
                        "lifetime": [("lifetime", None)]}
    start, terminate = provisioners_of(data["experiment"])
    assert start["interpreter"].startswith("${concat(local.portal,")
    assert terminate["interpreter"] == "${self.input.portal}"
    wait, inventory, _ = provisioners_of(data["ready"])
    assert "--terminate-on-failure" in wait["interpreter"]
    assert "--terminate-on-failure" not in inventory["interpreter"]
    for flag in ("--out", "local.inventory_path", "--known-hosts", "local.known_hosts_path", "--host-keys",
                 "var.host_keys", "--ssh-user", "var.ssh_user"):
        assert flag in inventory["interpreter"]
    portal = emulab["locals"]["portal"]
    assert "python3" in portal and "portal.py" in portal
    for flag in ("--project", "var.project", "--name", "var.experiment_name", "--pem", "var.pem_path",
                 "--retry-for", "var.portal_retry_minutes"):
        assert flag in portal
    assert "var.profile" in start["interpreter"] and "var.duration_hours" in start["interpreter"]


def test_emulab_a_new_duration_extends_instead_of_replacing(emulab):
    data = resources(emulab, "terraform_data")
    identity = emulab["locals"]["identity"]
    assert set(identity) == {"project", "name", "profile", "bindings"}
    assert "duration" not in str(identity) and "duration" not in data["experiment"]["triggers_replace"]
    assert data["experiment"]["triggers_replace"] == "${merge(local.identity, {started = terraform_data.started.id})}"
    assert data["lifetime"]["triggers_replace"] == {"experiment": "${terraform_data.experiment.id}",
                                                    "hours": "${var.duration_hours}"}
    (lifetime,) = provisioners_of(data["lifetime"])
    assert 'timeadd(terraform_data.started.output, "${var.duration_hours}h")' in lifetime["interpreter"]
    assert data["started"]["lifecycle"] == [{"ignore_changes": ["input"]}]


def test_emulab_destroy_needs_only_the_state(emulab):
    # Nothing reads inventory.json: no data source, no output.
    assert emulab["data"] == {}
    assert "file(" not in json.dumps(emulab["output"]) and "inventory" not in emulab["output"]
    assert emulab["output"]["inventory_path"]["value"] == "${local.inventory_path}"
    assert emulab["locals"]["inventory_path"] == '${abspath("${path.module}/inventory.json")}'
    assert emulab["locals"]["known_hosts_path"] == '${abspath("${path.module}/known_hosts")}'


def test_emulab_bindings_are_the_profiles_parameters(emulab):
    bindings = emulab["locals"]["bindings"]
    profile = (EMULAB / "profile.py").read_text()
    for name in ("datacenters", "servers_per_dc", "clients_per_dc", "hardware_type"):
        assert f"{name} =" in bindings
        assert f'pc.defineParameter("{name}"' in profile
    assert emulab["variable"]["datacenters"]["default"] == list(SPEC_REGIONS)


# ---- terraform itself ------------------------------------------------------------------


def terraform(*args, cwd, timeout=120, env=None):
    if not TERRAFORM.exists():
        pytest.fail(f"{TERRAFORM} is missing: run `make tf-tools` (make test does), which builds the pinned release")
    # GOGC: Terraform holds each provider's whole schema (the AWS one is 1.3 MB) and with Go's
    # default collects it over and over: terraform test took half again the CPU
    env = {**os.environ, "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1", "GOGC": "400", **(env or {})}
    return subprocess.run([str(TERRAFORM), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def test_the_tests_terraform_is_the_pinned_release():
    r = terraform("version", "-json", cwd=ROOT)
    # built from the module source, whose version carries the -dev its tree has between releases
    assert json.loads(r.stdout)["terraform_version"] in (TERRAFORM_VERSION, f"{TERRAFORM_VERSION}-dev"), r.stdout


def test_terraform_fmt():
    r = terraform("fmt", "-check", "-recursive", "-diff", "-no-color", str(TF), cwd=ROOT)
    assert r.returncode == 0, f"terraform fmt -recursive terraform/ would change:\n{r.stdout}{r.stderr}"


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    """A filesystem mirror of stand-in plugins serving the pinned providers' real schemas, and
    the CLI configuration that installs from it alone (terraform/standin_provider.py)."""
    if not SCHEMAS.exists():
        pytest.fail(f"{SCHEMAS} is missing: run `make tf-schemas` (make test does)")
    mirror = tmp_path_factory.mktemp("mirror")
    r = subprocess.run([sys.executable, str(TF / "standin_provider.py"), "install", "--schemas", str(SCHEMAS),
                        "--mirror", str(mirror)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return {"TF_CLI_CONFIG_FILE": str(mirror / "terraformrc")}


def initialized(directory, tmp_path, standins, edit=None):
    """A copy of a configuration (without state, variables or an earlier init), `edit` applied
    to its files' text, initialized from the stand-ins."""
    work = tmp_path / directory.name
    shutil.copytree(directory, work, ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*", "terraform.tfvars",
                                                                   "inventory.json", "known_hosts"))
    for path, (old, new) in (edit or {}).items():
        text = (work / path).read_text()
        assert text.count(old) == 1, f"{path}: {old!r}"
        (work / path).write_text(text.replace(old, new))
    r = terraform("init", "-backend=false", "-input=false", "-no-color", cwd=work, timeout=300, env=standins)
    assert r.returncode == 0, r.stdout + r.stderr
    return work


@pytest.mark.parametrize("directory", [EC2, EMULAB], ids=["ec2", "emulab"])
def test_terraform_init_and_validate(directory, tmp_path, standins):
    work = initialized(directory, tmp_path, standins)
    if directory == EC2:
        lock = (work / ".terraform.lock.hcl").read_text()
        for provider, version in (("aws", "6.25.0"), ("local", "2.6.1"), ("tls", "4.1.0")):
            assert f'provider "registry.terraform.io/hashicorp/{provider}" {{\n  version     = "{version}"' in lock
    r = terraform("validate", "-no-color", cwd=work, env=standins)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success! The configuration is valid." in r.stdout


def test_terraform_validate_checks_types_against_the_real_schema(tmp_path, standins):
    """What the name check cannot see: a value of the wrong type for the provider's attribute."""
    work = initialized(EC2, tmp_path, standins, {"main.tf": ("  monitoring = true\n", '  monitoring = "maybe"\n')})
    r = terraform("validate", "-no-color", cwd=work, env=standins)
    assert r.returncode != 0
    assert 'Inappropriate value for attribute "monitoring": a bool is required.' in r.stderr, r.stderr


def test_terraform_test_files_pass_with_mocked_providers(tmp_path, standins):
    work = initialized(EC2, tmp_path, standins)
    r = terraform("test", "-no-color", cwd=work, timeout=600, env=standins)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    runs = re.findall(r'^  run "(\w+)"\.\.\. (\w+)$', r.stdout, re.M)
    assert runs == [("the_default_cluster_plans_within_default_quotas", "pass"),
                    ("paper_scale_stops_at_plan_on_the_vcpu_quota", "pass"),
                    ("paper_scale_stops_at_plan_on_the_security_group_rule_quota", "pass"),
                    ("paper_scale_plans_with_raised_quotas", "pass"),
                    ("apply_yields_the_inventory_k2bench_reads", "pass"),
                    ("over_a_hundred_machines_split_into_prefix_lists_of_at_most_100", "pass")], r.stdout
    assert "Success! 6 passed, 0 failed." in r.stdout


def test_terraform_test_fails_when_the_prefix_lists_are_chunked_wrong(tmp_path, standins):
    work = initialized(EC2, tmp_path, standins,
                       {"locals.tf": ("prefix_list_max_entries = 100", "prefix_list_max_entries = 101")})
    r = terraform("test", "-no-color", "-filter=tests/prefix_lists.tftest.hcl", cwd=work, timeout=300, env=standins)
    assert r.returncode != 0
    assert 'run "over_a_hundred_machines_split_into_prefix_lists_of_at_most_100"... fail' in r.stdout
    assert 'aws_ec2_managed_prefix_list.cluster["VA-0"].max_entries is 101' in r.stderr + r.stdout


def without_providers(tmp_path, directory, files, extra=""):
    """Copies `files` of `directory` (which use no provider) into a fresh root and inits it."""
    work = tmp_path / directory.name
    work.mkdir()
    for name in files:
        src = directory / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    if extra:
        (work / "test.tf").write_text(extra)
    r = terraform("init", "-backend=false", "-input=false", "-no-color", cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    return work


EC2_GOOD = {"experiment_id": "k2b-test", "operator_cidr": "203.0.113.7/32",
            "ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample me@laptop"}


def plan(work, variables):
    args = [f"-var={k}={v}" for k, v in variables.items()]
    return terraform("plan", "-input=false", "-no-color", "-lock=false", *args, cwd=work)


@pytest.fixture(scope="module")
def ec2_variables(tmp_path_factory):
    return without_providers(tmp_path_factory.mktemp("tf"), EC2, ["variables.tf", "locals.tf"])


def test_ec2_good_variables_pass(ec2_variables):
    r = plan(ec2_variables, EC2_GOOD)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name, value, message", [
    ("operator_cidr", "0.0.0.0/0", "operator_cidr: 0.0.0.0/0 and other prefixes shorter than /8 are refused"),
    ("operator_cidr", "::/0", "operator_cidr: must be an IPv4 CIDR"),
    ("operator_cidr", "1.0.0.0/4", "operator_cidr: 0.0.0.0/0 and other prefixes shorter than /8 are refused"),
    ("operator_cidr", "203.0.113.7", "operator_cidr: must be an IPv4 CIDR"),
    ("operator_cidr", "203.0.113.7/24", "operator_cidr: host bits must be zero"),
    ("experiment_id", "K2B_demo", "experiment_id: use 4-32 characters"),
    ("ssh_public_key", "not a key", "ssh_public_key: must be one OpenSSH public key line"),
    ("datacenters", '{VA="us-east-1",CA="california"}', "datacenters: each value must be an AWS region name"),
    ("datacenters", '{va="us-east-1"}', "datacenters: give at least one datacenter"),
    ("servers_per_dc", "0", "servers_per_dc: must be a whole number from 1 to 32"),
    ("clients_per_dc", "1.5", "clients_per_dc: must be a whole number from 1 to 64"),
    ("server_ports", "{from=22,to=17999}", "server_ports: need 1024 <= from <= to <= 65535"),
    ("vpc_cidr", "10.0.0.0/8", "vpc_cidr: must be an IPv4 CIDR from /16 to /24"),
])
def test_ec2_bad_variables_are_refused_naming_the_field(ec2_variables, name, value, message):
    r = plan(ec2_variables, {**EC2_GOOD, name: value})
    assert r.returncode != 0
    assert message in " ".join(r.stderr.split()), r.stderr


def apply(work, variables, *extra):
    r = terraform("apply", "-auto-approve", "-input=false", "-no-color", "-lock=false",
                  *[f"-var={k}={v}" for k, v in variables.items()], *extra, cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(terraform("output", "-json", "-no-color", cwd=work).stdout)
    return {k: v["value"] for k, v in out.items()}


SHAPE_OUTPUTS = """
output "names" { value = [for h in local.host_list : h.name] }
output "rules" { value = local.inbound_rules_per_security_group }
output "prefix_lists" { value = local.prefix_lists }
output "hosts_per_region" { value = local.hosts_per_region }
"""


@pytest.fixture(scope="module")
def ec2_shape(tmp_path_factory):
    return without_providers(tmp_path_factory.mktemp("tf"), EC2, ["variables.tf", "locals.tf"], extra=SHAPE_OUTPUTS)


def test_ec2_default_cluster_is_two_servers_two_clients_per_datacenter(ec2_shape):
    out = apply(ec2_shape, EC2_GOOD)
    names = out["names"]
    assert len(names) == 6 * 4
    # Datacenters by name (map order), servers then clients, numerically.
    assert names[:4] == ["ca-server-0", "ca-server-1", "ca-client-0", "ca-client-1"]
    assert out["hosts_per_region"] == {region: 4 for region in SPEC_REGIONS.values()}


@pytest.mark.parametrize("shape, machines, rules, lists", [
    # The default cluster fits AWS's default quota of 60 rules per security group.
    ({}, 24, 51, [24]),
    # Paper scale: 4 servers per datacenter.
    ({"servers_per_dc": "4"}, 36, 75, [36]),
    ({"servers_per_dc": "4", "clients_per_dc": "8"}, 72, 147, [72]),
    # Over 100 machines: lists of at most 100 (CreateManagedPrefixList's limit per call).
    ({"servers_per_dc": "5", "clients_per_dc": "20"}, 150, 303, [100, 50]),
    ({"servers_per_dc": "20", "clients_per_dc": "30", "datacenters": '{VA="us-east-1",CA="us-west-1",LDN="eu-west-2",SG="ap-southeast-1",TYO="ap-northeast-1"}'},
     250, 503, [100, 100, 50]),
])
def test_ec2_cluster_shape_rules_and_prefix_lists(ec2_shape, shape, machines, rules, lists):
    out = apply(ec2_shape, {**EC2_GOOD, **shape})
    assert len(out["names"]) == machines
    assert out["rules"] == rules == 2 * machines + 3
    pls = out["prefix_lists"]
    dcs = sorted({pl["dc"] for pl in pls.values()})
    assert len(dcs) == len(out["hosts_per_region"])
    for dc in dcs:
        mine = sorted((pl for pl in pls.values() if pl["dc"] == dc), key=lambda pl: pl["index"])
        assert [pl["max_entries"] for pl in mine] == lists
        assert [len(pl["hosts"]) for pl in mine] == lists
        assert all(len(pl["hosts"]) <= 100 for pl in mine)
        # Every machine once, in inventory order.
        assert [h for pl in mine for h in pl["hosts"]] == out["names"]
        assert {f"{dc}-{pl['index']}" for pl in mine} <= set(pls)


# ---- the guardrails: quota checks, deadline, price (guardrails.tf, provider-free) --------

GUARDRAIL_INPUTS = """
variable "test_sg_quota" {
  type    = map(number)
  default = {}
}
variable "test_vcpu_quota" {
  type    = map(number)
  default = {}
}
variable "test_vcpus" {
  type    = number
  default = 8
}
variable "test_price_results" {
  type    = map(string)
  default = {}
}
# What quotas.tf reads from AWS, made up: 60 rules and 32 vCPUs unless a test says otherwise.
locals {
  quota_inputs = {
    for r in local.regions : r => {
      security_group_rules = lookup(var.test_sg_quota, r, 60)
      standard_vcpus       = local.standard_instance_family ? lookup(var.test_vcpu_quota, r, 32) : null
      vcpus_per_instance   = var.test_vcpus
    }
  }
  price_results = var.test_price_results
}
output "summary" { value = local.summary }
output "deadline" { value = local.deadline }
output "hourly_price_usd" { value = local.hourly_price_usd }
output "instance_usd_per_hour" { value = local.instance_usd_per_hour }
output "standard_instance_family" { value = local.standard_instance_family }
"""


@pytest.fixture
def guardrails(tmp_path):
    return without_providers(tmp_path, EC2, ["variables.tf", "locals.tf", "guardrails.tf"], extra=GUARDRAIL_INPUTS)


def failures(r):
    """The error messages of a failed plan/apply, each joined onto one line."""
    assert r.returncode != 0, r.stdout
    text = " ".join(line.strip("│ ").strip() for line in r.stderr.splitlines())
    return " ".join(text.split())


def test_ec2_default_cluster_fits_default_quotas(guardrails):
    r = plan(guardrails, EC2_GOOD)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ec2_paper_scale_stops_at_plan_naming_both_quotas_and_the_commands(guardrails):
    r = plan(guardrails, {**EC2_GOOD, "servers_per_dc": "4"})
    err = failures(r)
    assert ("Quota 'Inbound or outbound rules per security group' (L-0EA8095F) is too low: 36 machines need 75 "
            "inbound rules per security group") in err
    for region in SPEC_REGIONS.values():
        assert (f"aws service-quotas request-service-quota-increase --service-code vpc --quota-code L-0EA8095F "
                f"--desired-value 75 --region {region}") in err
        assert f"{region} needs 48 vCPUs for 6 machines and has 32" in err
        assert (f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-1216C47A "
                f"--desired-value 48 --region {region}") in err
    assert "Quota 'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances' (L-1216C47A) is too low " \
           "for c5.2xlarge (8 vCPUs each)" in err


def test_ec2_raised_quotas_let_paper_scale_through(guardrails):
    regions = list(SPEC_REGIONS.values())
    sg = "{" + ",".join(f'"{r}"=75' for r in regions) + "}"
    vcpu = "{" + ",".join(f'"{r}"=48' for r in regions) + "}"
    r = plan(guardrails, {**EC2_GOOD, "servers_per_dc": "4", "test_sg_quota": sg, "test_vcpu_quota": vcpu})
    assert r.returncode == 0, r.stderr


def test_ec2_only_the_regions_short_of_a_quota_are_named(guardrails):
    r = plan(guardrails, {**EC2_GOOD, "test_vcpu_quota": '{"sa-east-1"=16}', "test_sg_quota": '{"eu-west-2"=50}'})
    err = failures(r)
    assert "eu-west-2 has 50" in err and "--desired-value 51 --region eu-west-2" in err
    assert "sa-east-1 needs 32 vCPUs for 4 machines and has 16" in err
    assert "--service-code ec2 --quota-code L-1216C47A --desired-value 32 --region sa-east-1" in err
    assert "us-east-1" not in err


def test_ec2_two_datacenters_in_one_region_share_its_vcpu_quota(guardrails):
    r = plan(guardrails, {**EC2_GOOD, "datacenters": '{VA="us-east-1",VB="us-east-1"}'})
    err = failures(r)
    assert "us-east-1 needs 64 vCPUs for 8 machines and has 32" in err


def test_ec2_other_instance_families_skip_the_standard_vcpu_check(guardrails):
    r = plan(guardrails, {**EC2_GOOD, "instance_type": "g5.4xlarge", "test_vcpus": "16"})
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("instance_type, standard", [
    ("c5.2xlarge", True), ("t3.2xlarge", True), ("m7i-flex.large", True), ("i4i.xlarge", True),
    ("im4gn.large", True), ("z1d.large", True), ("r6g.large", True),
    ("g5.xlarge", False), ("p4d.24xlarge", False), ("inf2.xlarge", False), ("x2iedn.xlarge", False),
    ("hpc6a.48xlarge", False), ("trn1.2xlarge", False), ("mac2.metal", False), ("u-6tb1.metal", False),
])
def test_ec2_standard_instance_families(guardrails, instance_type, standard):
    assert apply(guardrails, {**EC2_GOOD, "instance_type": instance_type})["standard_instance_family"] is standard


def test_ec2_more_rules_than_aws_allows_is_refused_at_plan(guardrails):
    big = {**EC2_GOOD, "servers_per_dc": "32", "clients_per_dc": "64", "test_sg_quota": '{"us-east-1"=1000}'}
    err = failures(plan(guardrails, big))
    assert "576 machines need 1155 inbound rules per security group, above the 1000 AWS allows: use at most 498 machines" in err


def utc(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_ec2_deadline_is_max_hours_after_the_first_plan_and_stays(guardrails):
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    out = apply(guardrails, {**EC2_GOOD, "max_hours": "2.5"})
    after = datetime.datetime.now(datetime.timezone.utc)
    deadline = utc(out["deadline"])
    assert before + datetime.timedelta(minutes=150) <= deadline <= after + datetime.timedelta(minutes=150)
    assert f"Deadline: {out['deadline']}: every instance powers off and terminates itself then (max_hours = 2.5)" \
        in out["summary"]
    # A later apply, even with another max_hours, keeps the cluster's deadline.
    again = apply(guardrails, {**EC2_GOOD, "max_hours": "8"})
    assert again["deadline"] == out["deadline"]


def test_ec2_apply_after_the_deadline_is_refused(guardrails):
    apply(guardrails, EC2_GOOD)
    state_path = guardrails / "terraform.tfstate"
    state = json.loads(state_path.read_text())
    (deadline,) = [r for r in state["resources"] if r["type"] == "terraform_data" and r["name"] == "deadline"]
    deadline["instances"][0]["attributes"]["input"]["value"] = "2020-01-01T00:00:00Z"
    deadline["instances"][0]["attributes"]["output"]["value"] = "2020-01-01T00:00:00Z"
    state_path.write_text(json.dumps(state))
    err = failures(plan(guardrails, EC2_GOOD))
    assert "This cluster's deadline 2020-01-01T00:00:00Z (max_hours) has passed" in err
    assert "make ec2-down" in err


def price_product(usd):
    """A Price List product as GetProducts returns it (trimmed to what the estimate reads)."""
    return json.dumps({
        "product": {"productFamily": "Compute Instance", "sku": "SKU1",
                    "attributes": {"instanceType": "c5.2xlarge", "operatingSystem": "Linux"}},
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {"SKU1.JRTCKXETXF": {
                "offerTermCode": "JRTCKXETXF", "sku": "SKU1", "termAttributes": {},
                "priceDimensions": {"SKU1.JRTCKXETXF.6YS6EN2CT7": {
                    "unit": "Hrs", "pricePerUnit": {"USD": f"{usd:.10f}"}, "beginRange": "0", "endRange": "Inf",
                    "description": "$0.34 per On Demand Linux c5.2xlarge Instance Hour"}}}},
            "Reserved": {"SKU1.4NA7Y494T4": {"priceDimensions": {"SKU1.4NA7Y494T4.6YS6EN2CT7": {
                "unit": "Hrs", "pricePerUnit": {"USD": "0.2130000000"}}}}},
        },
    })


def hcl_map(mapping):
    return "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in mapping.items()) + "}"


def test_ec2_hourly_price_from_the_price_list(guardrails):
    two = '{VA="us-east-1",SP="sa-east-1"}'
    prices = {"VA": price_product(0.34), "SP": price_product(0.524)}
    out = apply(guardrails, {**EC2_GOOD, "datacenters": two, "test_price_results": hcl_map(prices)})
    assert out["instance_usd_per_hour"] == {"VA": 0.34, "SP": 0.524}
    # 4 machines in each of two regions, plus a public IPv4 address each.
    assert out["hourly_price_usd"] == pytest.approx(4 * 0.34 + 4 * 0.524 + 8 * 0.005)
    assert "Estimated price: $3.50 per hour" in out["summary"]


def test_ec2_price_unknown_says_so(guardrails):
    odd = {"VA": json.dumps({"terms": {"OnDemand": {}}})}
    out = apply(guardrails, {**EC2_GOOD, "datacenters": '{VA="us-east-1"}', "test_price_results": hcl_map(odd)})
    assert out["instance_usd_per_hour"] == {"VA": None}
    assert "hourly_price_usd" not in out  # null: `terraform output` leaves it out
    assert "Estimated price: unknown" in out["summary"]
    out = apply(guardrails, {**EC2_GOOD, "datacenters": '{VA="us-east-1"}'})  # price_estimate = false
    assert out["instance_usd_per_hour"] == {} and "hourly_price_usd" not in out
    assert "Estimated price: unknown" in out["summary"]


# ---- cloud-init: host key and deadline timer (modules/cloud-init, provider-free) ---------


def ed25519_pair():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, public + "\n"  # tls_private_key's public_key_openssh ends with a newline


def rendered_user_data(tmp_path, keys: dict, deadline: str) -> dict:
    """The cloud-init module's user data per host, rendered by Terraform (no provider)."""
    (tmp_path / "keys.json").write_text(json.dumps(
        {n: {"private_key_openssh": k[0], "public_key_openssh": k[1]} for n, k in keys.items()}))
    work = without_providers(tmp_path, EC2 / "modules", ["cloud-init"], extra=f"""
module "cloud_init" {{
  source    = "./cloud-init"
  host_keys = jsondecode(file("${{path.module}}/../keys.json"))
  deadline  = "{deadline}"
}}
output "user_data" {{
  value     = module.cloud_init.user_data
  sensitive = true
}}
""")
    return apply(work, {})["user_data"]


def test_cloud_init_installs_the_host_key_and_the_deadline_timer(tmp_path):
    import yaml
    from cryptography.hazmat.primitives import serialization

    keys = {name: ed25519_pair() for name in ("va-server-0", "va-client-0")}
    user_data = rendered_user_data(tmp_path, keys, "2026-11-25T04:30:00Z")
    assert set(user_data) == set(keys)
    for name, (private, public) in keys.items():
        text = user_data[name]
        assert text.startswith("#cloud-config\n")
        doc = yaml.safe_load(text)
        assert doc["ssh_deletekeys"] is True
        assert doc["ssh_genkeytypes"] == ["ed25519"]
        assert doc["ssh_keys"] == {"ed25519_private": private, "ed25519_public": public.strip()}
        # The private key sshd gets is the one known_hosts vouches for.
        loaded = serialization.load_ssh_private_key(doc["ssh_keys"]["ed25519_private"].encode(), None)
        derived = loaded.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                   serialization.PublicFormat.OpenSSH).decode()
        assert derived == public.strip()
        files = {f["path"]: f["content"] for f in doc["write_files"]}
        timer = files["/etc/systemd/system/k2bench-deadline.timer"]
        assert "OnCalendar=2026-11-25 04:30:00 UTC\n" in timer and "Persistent=true\n" in timer
        assert "WantedBy=timers.target" in timer
        assert "ExecStart=/usr/bin/systemctl poweroff\n" in files["/etc/systemd/system/k2bench-deadline.service"]
        assert files["/etc/k2bench-deadline"] == "2026-11-25T04:30:00Z\n"
        assert ["systemctl", "enable", "--now", "k2bench-deadline.timer"] in doc["runcmd"]
        (boot,) = doc["bootcmd"]
        assert boot[:2] == ["sh", "-c"] and "2026-11-25T04:30:00Z" in boot[2] and "systemctl poweroff" in boot[2]


CLOUD_INIT = ROOT / "target" / "cloud-init" / "usr" / "lib" / "python3" / "dist-packages"


def cloud_init_schema(path):
    """Debian's cloud-init checking a user data file against its own schema (make
    cloud-init-schema unpacks the package; Debian's python3 has its libraries)."""
    if not (CLOUD_INIT / "cloudinit").is_dir():
        pytest.fail(f"{CLOUD_INIT} is missing: run `make cloud-init-schema` (make test does)")
    return subprocess.run(["/usr/bin/python3", "-m", "cloudinit.config.schema", "--config-file", str(path)],
                          env={**os.environ, "PYTHONPATH": str(CLOUD_INIT)}, capture_output=True, text=True,
                          timeout=120)


def test_cloud_init_user_data_passes_cloud_inits_own_schema_and_a_broken_one_does_not(tmp_path):
    import yaml

    user_data = rendered_user_data(tmp_path, {"h": ed25519_pair()}, "2026-11-25T04:30:00Z")["h"]
    good = tmp_path / "user-data"
    good.write_text(user_data)
    r = cloud_init_schema(good)
    assert r.returncode == 0 and f"Valid cloud-config: {good}" in r.stdout, r.stdout + r.stderr
    # the same with two values of the wrong type, as a hand edit of the module might make them
    doc = yaml.safe_load(user_data)
    doc["ssh_deletekeys"] = "yes"
    doc["write_files"][0]["permissions"] = 644
    broken = tmp_path / "broken"
    broken.write_text("#cloud-config\n" + yaml.safe_dump(doc))
    r = cloud_init_schema(broken)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    (version,) = [p.name for p in CLOUD_INIT.glob("cloud_init-*.egg-info")]  # which Debian release's
    assert "ssh_deletekeys: 'yes' is not of type 'boolean'" in out, f"{version}: {out}"
    assert "write_files.0.permissions: 644 is not of type 'string'" in out, f"{version}: {out}"


@pytest.mark.parametrize("deadline, powers_off", [("2020-01-01T00:00:00Z", True), ("2999-01-01T00:00:00Z", False)])
def test_cloud_init_boot_check_powers_off_only_past_the_deadline(tmp_path, deadline, powers_off):
    """Runs the bootcmd's shell line with `systemctl` replaced by a recorder."""
    import yaml

    (boot,) = yaml.safe_load(rendered_user_data(tmp_path, {"h": ed25519_pair()}, deadline)["h"])["bootcmd"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "systemctl.args"
    (bin_dir / "systemctl").write_text(f'#!/bin/sh\necho "$@" >> {record}\n')
    (bin_dir / "systemctl").chmod(0o755)
    r = subprocess.run(boot, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert (record.read_text() if record.exists() else "") == ("poweroff --no-block\n" if powers_off else "")


# ---- the inventory module ----------------------------------------------------------------


def render_ec2_inventory(tmp_path, variables, known_hosts='"known_hosts"'):
    """The inventory module of terraform/ec2 fed by its real host_list, with made-up
    addresses and host keys. Returns (inventory, known_hosts content)."""
    work = without_providers(tmp_path, EC2, ["variables.tf", "locals.tf", "modules"], extra=f"""
module "inventory" {{
  source          = "./modules/inventory"
  experiment_id   = var.experiment_id
  ssh_user        = "ubuntu"
  ssh_private_key = var.ssh_private_key
  known_hosts     = {known_hosts}
  hosts = [for i, h in local.host_list : merge(h, {{
    public_ip  = cidrhost("198.51.100.0/24", i + 10)
    private_ip = cidrhost(var.vpc_cidr, i + 10)
    host_key   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${{format("%032d", i)}}\\n"
  }})]
}}
output "inventory" {{ value = module.inventory.json }}
output "known_hosts" {{ value = module.inventory.known_hosts }}
""")
    out = apply(work, variables)
    return json.loads(out["inventory"]), out["known_hosts"]


def test_ec2_inventory_tiny_matches_golden(tmp_path):
    doc, known_hosts = render_ec2_inventory(tmp_path, {**EC2_GOOD, "datacenters": '{VA="us-east-1",LDN="eu-west-2"}',
                                                       "servers_per_dc": "1", "clients_per_dc": "1"})
    assert doc == json.loads((FIXTURES / "ec2-inventory-tiny.json").read_text())
    assert known_hosts == (FIXTURES / "ec2-known_hosts-tiny").read_text()
    inv = k2inventory.parse(doc)
    assert inv.regions == {"LDN": "eu-west-2", "VA": "us-east-1"}
    assert inv.address(inv.hosts("VA", "server")[0]) == "198.51.100.12"


def test_ec2_inventory_default_cluster_parses(tmp_path):
    doc, known_hosts = render_ec2_inventory(tmp_path, EC2_GOOD)
    inv = k2inventory.parse(doc)
    assert (inv.provider, inv.latency, inv.topology_address, inv.ssh_user) == ("ec2", "real", "public", "ubuntu")
    assert doc["ssh"]["known_hosts"] == "known_hosts"
    assert inv.regions == SPEC_REGIONS
    for dc in SPEC_REGIONS:
        assert [h.name for h in inv.hosts(dc)] == [f"{dc.lower()}-server-{i}" for i in range(2)] + \
            [f"{dc.lower()}-client-{i}" for i in range(2)]
    assert len({h.public_ip for h in inv.hosts()}) == 24
    # One known_hosts line per machine, by the address Fabric and Ansible connect to.
    lines = known_hosts.splitlines()
    assert len(lines) == 24 and known_hosts.endswith("\n")
    assert [line.split()[0] for line in lines] == [h.public_ip for dc in sorted(SPEC_REGIONS) for h in inv.hosts(dc)]
    assert all(line.split()[1] == "ssh-ed25519" and len(line.split()) == 3 for line in lines)


def test_inventory_module_without_known_hosts_leaves_the_field_out(tmp_path):
    """The module's known_hosts input is optional (null): callers that do not pass it get
    the inventory they got before."""
    doc, _ = render_ec2_inventory(tmp_path, {**EC2_GOOD, "datacenters": '{VA="us-east-1",LDN="eu-west-2"}',
                                             "servers_per_dc": "1", "clients_per_dc": "1"}, known_hosts="null")
    golden = json.loads((FIXTURES / "ec2-inventory-tiny.json").read_text())
    del golden["ssh"]["known_hosts"]
    assert doc == golden


@pytest.fixture(scope="module")
def emulab_variables(tmp_path_factory):
    return without_providers(tmp_path_factory.mktemp("tf"), EMULAB, ["variables.tf"])


@pytest.fixture
def emulab_good(tmp_path):
    pem = tmp_path / "emulab.pem"
    pem.write_text("certificate\n")
    return {"project": "K2Bench", "profile": "K2Bench,k2bench", "pem_path": str(pem)}


def test_emulab_good_variables_pass(emulab_variables, emulab_good):
    r = plan(emulab_variables, emulab_good)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name, value, message", [
    ("project", "my project", "project: your Emulab project id"),
    ("profile", "k2bench", "profile: give the portal profile as project,name"),
    ("pem_path", "/nonexistent/emulab.pem", "pem_path: no such file"),
    ("experiment_name", "a-name-longer-than-16", "experiment_name: use 1-16 letters"),
    ("duration_hours", "0", "duration_hours: must be a whole number of hours from 1 to 168"),
    ("datacenters", '["VA","va"]', "datacenters: give distinct names"),
    ("hardware_type", "D430!", "hardware_type: an Emulab node type"),
    ("host_keys", "trust", "host_keys: published or keyscan"),
    ("ssh_user", "Alice Smith", "ssh_user: your Emulab login"),
])
def test_emulab_bad_variables_are_refused_naming_the_field(emulab_variables, emulab_good, name, value, message):
    r = plan(emulab_variables, {**emulab_good, name: value})
    assert r.returncode != 0
    assert message in " ".join(r.stderr.split()), r.stderr


# ---- checkov -----------------------------------------------------------------------------


def test_checkov_passes():
    if not CHECKOV.exists():
        pytest.fail(f"checkov not found at {CHECKOV}: `{CHECKOV_INSTALL}` (or set K2BENCH_CHECKOV)")
    r = subprocess.run([str(CHECKOV), "-d", str(TF), "--framework", "terraform", "secrets",
                        "--skip-download", "--output", "json"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    reports = json.loads(r.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    by_type = {rep.get("check_type"): rep for rep in reports}
    failed = [f"{c['check_id']} {c['resource']} ({c['file_path']})"
              for rep in reports for c in rep.get("results", {}).get("failed_checks", [])]
    assert not failed, "checkov failed:\n" + "\n".join(failed)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = by_type["terraform"]["summary"]
    assert summary["passed"] >= 100 and summary["parsing_errors"] == 0, summary


# ---- Emulab: Terraform's own argument lists drive portal.py ----------------------------


def test_emulab_apply_extend_and_destroy_against_a_fake_portal(tmp_path, monkeypatch):
    """The whole configuration (it needs no provider) applied against the fake portal: apply
    writes inventory.json + known_hosts; a longer duration_hours extends the experiment
    instead of replacing it; destroy terminates it without the inventory file."""
    from test_emulab_portal import EXPECTED, KEYS, NODES, FakePortal, serve

    work = tmp_path / "emulab"
    work.mkdir()
    for path in list(EMULAB.glob("*.tf")) + [EMULAB / "portal.py"]:
        shutil.copy(path, work / path.name)
    r = terraform("init", "-input=false", "-no-color", cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    pem = tmp_path / "emulab.pem"
    pem.write_text("certificate\n")
    published = tmp_path / "published.keys"
    published.write_text("".join(f"{n} ssh-ed25519 {k}\n" for n, k in KEYS.items()))
    ssh = tmp_path / "fake-ssh"
    ssh.write_text(f"#!/bin/sh\ncat {published}\n")
    ssh.chmod(0o755)
    variables = {"project": "K2Bench", "experiment_name": "k2b-emu", "profile": "K2Bench,k2bench",
                 "pem_path": str(pem), "datacenters": '["VA","LDN"]', "servers_per_dc": "2",
                 "clients_per_dc": "1", "duration_hours": "4", "ssh_user": "alice"}
    fake = FakePortal(statuses=["ready"])
    server = serve(fake)
    monkeypatch.setenv("K2BENCH_EMULAB_URL", f"http://127.0.0.1:{server.server_address[1]}/usr/testbed")
    monkeypatch.setenv("K2BENCH_EMULAB_SSH", str(ssh))
    monkeypatch.delenv("K2BENCH_EMULAB_PEM_PASSWORD", raising=False)

    def tf(*args, **changes):
        return terraform(*args, "-auto-approve", "-input=false", "-no-color", "-lock=false",
                         *[f"-var={k}={v}" for k, v in {**variables, **changes}.items()], cwd=work)

    try:
        r = tf("apply")
        assert r.returncode == 0, r.stdout + r.stderr
        assert fake.methods() == ["startExperiment", "experimentStatus", "experimentManifests", "experimentStatus"]
        assert json.loads(fake.calls[0][2]["bindings"]) == {
            "datacenters": "VA,LDN", "servers_per_dc": "2", "clients_per_dc": "1", "hardware_type": "d430"}
        assert fake.calls[0][2]["duration"] == "4"
        assert json.loads((work / "inventory.json").read_text()) == EXPECTED
        assert len((work / "known_hosts").read_text().splitlines()) == len(NODES)
        out = terraform("output", "-raw", "-no-color", "inventory_path", cwd=work)
        assert out.stdout == str(work / "inventory.json")

        expires = fake.experiments["K2Bench,k2b-emu"]["expires"]
        fake.calls.clear()
        r = tf("apply", duration_hours="10")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Resources: 1 added, 0 changed, 1 destroyed." in r.stdout  # lifetime only
        extends = [p for m, _, p in fake.calls if m == "extendExperiment"]
        assert [p["wanted"] for p in extends] == [6]
        assert "startExperiment" not in fake.methods() and "terminateExperiment" not in fake.methods()
        assert fake.experiments["K2Bench,k2b-emu"]["expires"] - expires == datetime.timedelta(hours=6)

        # make emulab-extend HOURS=3: extendExperiment with the arguments the state holds.
        fake.calls.clear()
        r = subprocess.run(["make", "--no-print-directory", "emulab-extend", "HOURS=3",
                            f"TF_EMULAB=terraform -chdir={work}", f"PYTHON={sys.executable}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        extends = [p for m, _, p in fake.calls if m == "extendExperiment"]
        assert extends == [{"experiment": "K2Bench,k2b-emu", "wanted": 3, "reason": "k2bench: make emulab-extend HOURS=3"}]
        assert fake.experiments["K2Bench,k2b-emu"]["expires"] - expires == datetime.timedelta(hours=9)

        (work / "inventory.json").unlink()  # git-ignored: a fresh clone or a clean has none
        fake.calls.clear()
        r = tf("destroy", duration_hours="10")
        assert r.returncode == 0, r.stdout + r.stderr
        assert fake.methods() == ["terminateExperiment"] and fake.experiments == {}
        assert not (work / "known_hosts").exists()  # the experiment's keys go with it
    finally:
        server.shutdown()
        server.server_close()
