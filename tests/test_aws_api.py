"""The project's AWS calls against an EC2-shaped API: moto's server (pinned in
requirements.txt) on 127.0.0.1, started here and stopped by its pid.

- `make ec2-status` (terraform/ec2_status.py) finds instances and left-over VPCs by tag,
  region by region, and says what to terminate;
- the AMI query of terraform/ec2/main.tf (owner, name and virtualization filters read from
  the file) picks Canonical's newest Ubuntu 22.04 amd64 HVM image among decoys;
- what the terraform test mocks and the guardrail tests assume of AWS: the quota
  quotas.tf reads for security group rules (60 by default), c5.2xlarge's 8 vCPUs, and its
  offer in each of the six regions' zones.

What moto lacks is said where it matters: Service Quotas knows only the VPC service, so the
EC2 vCPU quota (L-1216C47A) is not asked here; there is no Price List API, which only
Terraform's aws_pricing_product calls (the guardrail tests feed it made-up products).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import boto3
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "terraform"))
from ec2_status import _hcl  # noqa: E402  (the same parser options as the status command)

CANONICAL = "099720109477"
REGIONS = {"VA": "us-east-1", "CA": "us-west-1", "SP": "sa-east-1", "LDN": "eu-west-2", "TYO": "ap-northeast-1",
           "SG": "ap-southeast-1"}


def image(ami_id, name, owner=CANONICAL, virtualization="hvm", created="2024-01-01T00:00:00.000Z"):
    return {"ami_id": ami_id, "name": name, "description": name, "owner_id": owner, "public": True,
            "virtualization_type": virtualization, "architecture": "arm64" if "arm64" in name else "x86_64",
            "state": "available", "platform": None, "root_device_type": "ebs", "root_device_name": "/dev/sda1",
            "sriov": "simple", "hypervisor": "xen", "creation_date": created}


JAMMY = "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-"
AMIS = [
    image("ami-0000000000000jam1", JAMMY + "20240101", created="2024-01-01T00:00:00.000Z"),
    image("ami-0000000000000jam2", JAMMY + "20240601", created="2024-06-01T00:00:00.000Z"),  # the newest: the one
    image("ami-0000000000000arm1", "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-arm64-server-20240701",
          created="2024-07-01T00:00:00.000Z"),
    image("ami-0000000000000foc1", "ubuntu/images/hvm-ssd/ubuntu-focal-20.04-amd64-server-20240701",
          created="2024-07-01T00:00:00.000Z"),
    image("ami-0000000000000oth1", JAMMY + "20240701", owner="123456789012", created="2024-07-01T00:00:00.000Z"),
    image("ami-0000000000000par1", JAMMY + "20240702", virtualization="paravirtual",
          created="2024-07-02T00:00:00.000Z"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def aws(tmp_path_factory):
    """moto's server on loopback with the AMI fixture; the endpoint and fake credentials."""
    import urllib.request

    amis = tmp_path_factory.mktemp("moto") / "amis.json"
    amis.write_text(json.dumps(AMIS))
    port = free_port()
    log_path = amis.parent / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                env={**os.environ, "MOTO_AMIS_PATH": str(amis)}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:  # moto's own API answering: not some other listener that took the port
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/data.json", timeout=2) as r:
                    assert r.status == 200
                break
            except OSError:
                assert proc.poll() is None, f"moto's server stopped: {log_path.read_text()}"
                assert time.monotonic() < deadline, "moto's server did not answer within 60 s"
                time.sleep(0.1)
        assert proc.poll() is None, log_path.read_text()
        yield {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "AKIATESTING",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)


def client(aws, service, region):
    return boto3.client(service, region_name=region, endpoint_url=aws["AWS_ENDPOINT_URL"],
                        aws_access_key_id=aws["AWS_ACCESS_KEY_ID"], aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"])


def tags(**kv):
    return [{"Key": k, "Value": v} for k, v in kv.items()]


def ec2_status(aws, *args):
    """`make ec2-status` with this virtualenv (taken as installed: -o), against moto only (no
    other AWS setting of the environment, no proxy, no make variables from a calling make),
    for two of the datacenters."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MAKE", "MFLAGS"))
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env.update(aws, TF_VAR_datacenters='{VA="us-east-1", SP="sa-east-1"}', AWS_CONFIG_FILE=os.devnull,
               AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    venv = os.path.dirname(os.path.dirname(sys.executable))
    return subprocess.run(["make", "--no-print-directory", "-s", f"VENV={venv}", "-o", f"{venv}/.installed",
                           "ec2-status", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_ec2_status_finds_instances_and_left_over_vpcs_by_tag(aws):
    r = ec2_status(aws)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "us-east-1 (VA): no instances" in r.stdout and "Total: no k2bench instances." in r.stdout

    ids = {}
    for dc, region in (("VA", "us-east-1"), ("SP", "sa-east-1")):
        ec2 = client(aws, "ec2", region)
        vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": tags(
            project="k2bench", experiment_id="k2b-test")}])["Vpc"]["VpcId"]
        launched = ec2.run_instances(ImageId="ami-0000000000000jam2", InstanceType="c5.2xlarge", MinCount=2,
                                     MaxCount=2)["Instances"]
        for i, (inst, role) in enumerate(zip(launched, ("server", "client"))):
            name = f"{dc.lower()}-{role}-0"
            ec2.create_tags(Resources=[inst["InstanceId"]], Tags=tags(
                project="k2bench", experiment_id="k2b-test", Name=name, dc=dc, role=role,
                deadline="2026-11-25T04:30:00Z"))
            ids[name] = inst["InstanceId"]
        ids[f"{dc} vpc"] = vpc
    # not k2bench's: in the region, untagged
    client(aws, "ec2", "us-east-1").run_instances(ImageId="ami-0000000000000jam2", InstanceType="t3.micro",
                                                  MinCount=1, MaxCount=1)

    r = ec2_status(aws)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "us-east-1 (VA): 2 instances (2 running)" in out and "sa-east-1 (SP): 2 instances (2 running)" in out
    for name in ("va-server-0", "va-client-0", "sp-server-0", "sp-client-0"):
        (line,) = [x for x in out.splitlines() if f" {name} " in x]
        assert "k2b-test" in line and "running" in line and "c5.2xlarge" in line and "terminates 2026-11-25T04:30:00Z" in line
    assert out.index("va-server-0") < out.index("va-client-0"), "servers before clients"
    assert f"k2b-test         1 VPC ({ids['VA vpc']}): free; make ec2-down removes it" in out
    assert "Total: 4 instances, 4 of them billed by the hour (experiments: k2b-test)." in out
    assert (f"aws ec2 terminate-instances --region us-east-1 --instance-ids {ids['va-server-0']} "
            f"{ids['va-client-0']}") in out

    # what a deadline leaves: the instances terminate themselves, the VPCs stay
    for region, names in (("us-east-1", ("va-server-0", "va-client-0")), ("sa-east-1", ("sp-server-0", "sp-client-0"))):
        client(aws, "ec2", region).terminate_instances(InstanceIds=[ids[n] for n in names])
    r = ec2_status(aws, "ARGS=--experiment-id k2b-test")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sa-east-1 (SP): no instances" in r.stdout and "Total: no k2bench instances." in r.stdout
    assert f"1 VPC ({ids['SP vpc']})" in r.stdout


def test_the_ami_query_of_main_tf_picks_canonicals_newest_jammy_amd64(aws):
    (block,) = [b for b in _hcl((ROOT / "terraform" / "ec2" / "main.tf").read_text())["data"] if "aws_ami" in b]
    query = block["aws_ami"]["ubuntu"]
    assert query["most_recent"] is True
    filters = [{"Name": f["name"], "Values": f["values"]} for f in query["filter"]]
    for region in REGIONS.values():
        found = client(aws, "ec2", region).describe_images(Owners=query["owners"], Filters=filters)["Images"]
        assert sorted(i["ImageId"] for i in found) == ["ami-0000000000000jam1", "ami-0000000000000jam2"], found
        newest = max(found, key=lambda i: i["CreationDate"])
        assert newest["ImageId"] == "ami-0000000000000jam2"


def test_what_the_mocks_assume_of_aws_is_what_an_ec2_shaped_api_answers(aws):
    import re

    variables = {k: v for block in _hcl((ROOT / "terraform" / "ec2" / "variables.tf").read_text())["variable"]
                 for k, v in block.items()}
    assert variables["datacenters"]["default"] == REGIONS and variables["instance_type"]["default"] == "c5.2xlarge"
    quotas = _hcl((ROOT / "terraform" / "ec2" / "quotas.tf").read_text())["data"]
    (rules,) = [b["aws_servicequotas_service_quota"]["security_group_rules"] for b in quotas
                if "security_group_rules" in b.get("aws_servicequotas_service_quota", {})]
    mock = (ROOT / "terraform" / "ec2" / "tests" / "mocks" / "aws.tfmock.hcl").read_text()
    for region in REGIONS.values():
        q = client(aws, "service-quotas", region).get_service_quota(ServiceCode=rules["service_code"],
                                                                    QuotaCode=rules["quota_code"])["Quota"]
        assert q["QuotaName"] == "Inbound or outbound rules per security group" and q["Value"] == 60
        ec2 = client(aws, "ec2", region)
        (t,) = ec2.describe_instance_types(InstanceTypes=["c5.2xlarge"])["InstanceTypes"]
        assert t["VCpuInfo"]["DefaultVCpus"] == 8
        zones = ec2.describe_instance_type_offerings(LocationType="availability-zone", Filters=[
            {"Name": "instance-type", "Values": ["c5.2xlarge"]}])["InstanceTypeOfferings"]
        assert zones and all(z["Location"].startswith(region) for z in zones), region
    assert re.search(r"^\s*value = 60$", mock, re.M) and re.search(r"^\s*default_vcpus = 8$", mock, re.M)
