"""terraform/ec2_status.py: what k2bench runs on EC2, by tags, without the Terraform state.

EC2 is stood in for by botocore's Stubber: each expected call with its exact parameters
and a canned answer, no network.
"""
import datetime
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

import boto3  # pinned in requirements.txt (make venv)
from botocore.stub import Stubber

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "terraform" / "ec2_status.py"

spec = importlib.util.spec_from_file_location("ec2_status", SCRIPT)
ec2_status = importlib.util.module_from_spec(spec)
sys.modules["ec2_status"] = ec2_status  # dataclasses look their module up there
spec.loader.exec_module(ec2_status)

LAUNCH = datetime.datetime(2026, 11, 25, 0, 50, tzinfo=datetime.timezone.utc)
DEADLINE = "2026-11-25T04:50:00Z"
LIVE = ["pending", "running", "shutting-down", "stopping", "stopped"]


def instance(iid, name, dc, role, state="running", experiment="k2b-demo", ip="198.51.100.7"):
    tags = [{"Key": "Name", "Value": name}, {"Key": "project", "Value": "k2bench"},
            {"Key": "experiment_id", "Value": experiment}, {"Key": "dc", "Value": dc},
            {"Key": "role", "Value": role}, {"Key": "deadline", "Value": DEADLINE}]
    out = {"InstanceId": iid, "InstanceType": "c5.2xlarge", "State": {"Name": state, "Code": 16},
           "LaunchTime": LAUNCH, "Tags": tags}
    if ip:
        out["PublicIpAddress"] = ip
    return out


def filters(experiment=None, states=True):
    f = [{"Name": "tag:project", "Values": ["k2bench"]}]
    if experiment:
        f.append({"Name": "tag:experiment_id", "Values": [experiment]})
    if states:
        f.append({"Name": "instance-state-name", "Values": LIVE})
    return f


def stubbed(region, instances=(), vpcs=(), experiment=None, error=None):
    """An EC2 client for `region` that expects describe_instances then describe_vpcs."""
    client = boto3.client("ec2", region_name=region, aws_access_key_id="AKIATEST", aws_secret_access_key="x")
    stub = Stubber(client)
    if error:
        stub.add_client_error("describe_instances", service_error_code=error[0], service_message=error[1],
                              expected_params={"Filters": filters(experiment)})
    else:
        stub.add_response("describe_instances",
                          {"Reservations": [{"ReservationId": "r-1", "Instances": list(instances)}] if instances else []},
                          {"Filters": filters(experiment)})
        stub.add_response("describe_vpcs",
                          {"Vpcs": [{"VpcId": v, "Tags": [{"Key": "experiment_id", "Value": e}]} for v, e in vpcs]},
                          {"Filters": filters(experiment, states=False)})
    stub.activate()
    return client, stub


def test_instances_and_leftover_vpcs_by_region():
    va, va_stub = stubbed("us-east-1", instances=[
        instance("i-3", "va-client-0", "VA", "client"),
        instance("i-2", "va-server-10", "VA", "server"),
        instance("i-1", "va-server-2", "VA", "server", state="shutting-down"),
    ], vpcs=[("vpc-1", "k2b-demo")])
    sp, sp_stub = stubbed("sa-east-1", vpcs=[("vpc-9", "k2b-old")])
    clients = {"us-east-1": va, "sa-east-1": sp}
    statuses = ec2_status.collect({"us-east-1": ["VA"], "sa-east-1": ["SP"]}, None, clients.__getitem__)
    va_stub.assert_no_pending_responses()
    sp_stub.assert_no_pending_responses()

    # Servers before clients, by number (server-2 before server-10).
    assert [i.name for i in statuses[0].instances] == ["va-server-2", "va-server-10", "va-client-0"]
    assert statuses[0].vpcs == {"k2b-demo": ["vpc-1"]}
    assert statuses[1].instances == [] and statuses[1].vpcs == {"k2b-old": ["vpc-9"]}

    text = ec2_status.render(statuses, None, "the default in terraform/ec2/variables.tf")
    lines = text.splitlines()
    assert lines[0] == ("k2bench on EC2 (tag project=k2bench, every experiment; regions of datacenters from "
                        "the default in terraform/ec2/variables.tf):")
    assert lines[1] == "us-east-1 (VA): 3 instances (2 running, 1 shutting-down)"
    assert lines[2].split() == ["k2b-demo", "va-server-2", "shutting-down", "c5.2xlarge", "198.51.100.7",
                                "launched", "2026-11-25", "00:50", "UTC", "terminates", DEADLINE]
    assert "k2b-demo 1 VPC (vpc-1): free; make ec2-down removes it" in " ".join(lines[5].split())
    assert lines[6] == "sa-east-1 (SP): no instances"
    assert "k2b-old" in lines[7] and "vpc-9" in lines[7]
    assert lines[8] == "Total: 3 instances, 3 of them billed by the hour (experiments: k2b-demo)."
    assert lines[9] == "Remove them: make ec2-down (with the state); without it:"
    assert lines[10:] == ["  aws ec2 terminate-instances --region us-east-1 --instance-ids i-1 i-2 i-3"]


def test_one_experiment_only_filters_by_its_tag():
    client, stub = stubbed("eu-west-2", instances=[instance("i-1", "ldn-server-0", "LDN", "server", ip=None)],
                           experiment="k2b-demo")
    (status,) = ec2_status.collect({"eu-west-2": ["LDN"]}, "k2b-demo", lambda region: client)
    stub.assert_no_pending_responses()
    assert status.instances[0].public_ip == "-"
    text = ec2_status.render([status], "k2b-demo", "TF_VAR_datacenters")
    assert "experiment_id=k2b-demo" in text.splitlines()[0]


def test_a_region_that_refuses_is_reported_and_the_others_still_shown():
    bad, bad_stub = stubbed("ap-southeast-1", error=("UnauthorizedOperation", "You are not authorized"))
    good, good_stub = stubbed("us-east-1")
    clients = {"ap-southeast-1": bad, "us-east-1": good}
    statuses = ec2_status.collect({"ap-southeast-1": ["SG"], "us-east-1": ["VA"]}, None, clients.__getitem__)
    bad_stub.assert_no_pending_responses()
    good_stub.assert_no_pending_responses()
    text = ec2_status.render(statuses, None, "x")
    assert "ap-southeast-1 (SG): could not look: UnauthorizedOperation: You are not authorized" in text
    assert "us-east-1 (VA): no instances" in text
    assert "Total: no k2bench instances." in text
    assert text.endswith("Not looked at: ap-southeast-1 (see above).")


# ---- which regions ---------------------------------------------------------------------


def ec2_dir(tmp_path, tfvars=None):
    d = tmp_path / "ec2"
    d.mkdir()
    (d / "variables.tf").write_text((ROOT / "terraform" / "ec2" / "variables.tf").read_text())
    if tfvars is not None:
        (d / "terraform.tfvars").write_text(tfvars)
    return d


def test_regions_as_terraform_resolves_datacenters(tmp_path):
    d = ec2_dir(tmp_path)
    dcs, where = ec2_status.datacenters({}, d)
    assert dcs == {"VA": "us-east-1", "CA": "us-west-1", "SP": "sa-east-1", "LDN": "eu-west-2",
                   "TYO": "ap-northeast-1", "SG": "ap-southeast-1"}
    assert where == "the default in terraform/ec2/variables.tf"
    (d / "terraform.tfvars").write_text('experiment_id = "k2b-x"\ndatacenters = {\n  VA = "us-east-1" # mine\n}\n')
    assert ec2_status.datacenters({}, d) == ({"VA": "us-east-1"}, str(d / "terraform.tfvars"))
    env = {"TF_VAR_datacenters": '{VA="us-east-1",LDN="eu-west-2"}'}
    assert ec2_status.datacenters(env, d) == ({"VA": "us-east-1", "LDN": "eu-west-2"}, "TF_VAR_datacenters")


def test_bad_datacenters_is_one_line(tmp_path):
    with pytest.raises(ec2_status.StatusError, match="^ec2-status: TF_VAR_datacenters: not an HCL map"):
        ec2_status.datacenters({"TF_VAR_datacenters": "{VA="}, ec2_dir(tmp_path))


# ---- the command -------------------------------------------------------------------------


def run(tmp_path, *args, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TF_VAR_")) and k != "HOME"}
    (tmp_path / "home").mkdir(exist_ok=True)
    clean.update(HOME=str(tmp_path / "home"), AWS_EC2_METADATA_DISABLED="true",
                 AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), **env)
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=clean,
                          timeout=60)


def test_without_credentials_one_line(tmp_path):
    r = run(tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ec2_status.NO_CREDENTIALS + "\n"


def test_unknown_profile_one_line(tmp_path):
    r = run(tmp_path, AWS_PROFILE="nosuch")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.count("\n") == 1 and "nosuch" in r.stderr and "AWS_PROFILE" in r.stderr
