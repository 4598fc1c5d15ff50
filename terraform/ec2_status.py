#!/usr/bin/env python3
"""What k2bench has on EC2, found by tags: no Terraform state needed.

    python3 terraform/ec2_status.py                    # every k2bench experiment
    python3 terraform/ec2_status.py --experiment-id k2b-demo
    python3 terraform/ec2_status.py --region eu-west-1 # other regions than the datacenters'

Looks in every region of terraform/ec2's `datacenters` (TF_VAR_datacenters, else
terraform/ec2/terraform.tfvars, else the default in variables.tf) for instances tagged
project=k2bench that are not terminated, and for VPCs with that tag (left behind when the
instances have terminated themselves at their deadline; free, but `make ec2-down` removes
them). So a lost state file cannot hide a running cluster.

Exit 0 when every region answered; 1 when one did not (its line says why); 2 with one
line without credentials.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

EC2_DIR = Path(__file__).resolve().parent / "ec2"

PROJECT_TAG = ("project", "k2bench")
# Everything but terminated: shutting-down and stopping instances still bill.
LIVE_STATES = ["pending", "running", "shutting-down", "stopping", "stopped"]

NO_CREDENTIALS = ("ec2-status: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                  "or AWS_PROFILE, or run `aws configure`")


class StatusError(Exception):
    """A problem that ends the command with one line."""


# ---- which regions -----------------------------------------------------------------------


def _hcl(text: str) -> dict:
    import hcl2

    options = hcl2.SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
    return hcl2.loads(text, serialization_options=options)


def datacenters(env: dict, ec2_dir: Path = EC2_DIR) -> tuple[dict[str, str], str]:
    """(datacenter => region, where that came from), as Terraform would resolve the variable."""
    if env.get("TF_VAR_datacenters"):
        try:
            value = _hcl(f"datacenters = {env['TF_VAR_datacenters']}\n")["datacenters"]
        except Exception as e:  # the parser's own exception types vary by version
            raise StatusError(f"ec2-status: TF_VAR_datacenters: not an HCL map such as "
                              f'{{VA="us-east-1"}} ({type(e).__name__})') from None
        return _checked(value, "TF_VAR_datacenters")
    tfvars = ec2_dir / "terraform.tfvars"
    if tfvars.is_file():
        try:
            value = _hcl(tfvars.read_text()).get("datacenters")
        except Exception as e:
            raise StatusError(f"ec2-status: {tfvars}: cannot parse it ({type(e).__name__})") from None
        if value is not None:
            return _checked(value, str(tfvars))
    for block in _hcl((ec2_dir / "variables.tf").read_text()).get("variable", []):
        if "datacenters" in block:
            return _checked(block["datacenters"]["default"], "the default in terraform/ec2/variables.tf")
    raise StatusError("ec2-status: terraform/ec2/variables.tf has no variable datacenters")


def _checked(value, where: str) -> tuple[dict[str, str], str]:
    if not isinstance(value, dict) or not value or not all(isinstance(r, str) for r in value.values()):
        raise StatusError(f"ec2-status: datacenters from {where}: must map datacenter names to regions, "
                          f'such as {{VA="us-east-1"}}')
    return dict(value), where


# ---- what is there -----------------------------------------------------------------------


@dataclass
class Instance:
    id: str
    name: str
    experiment_id: str
    dc: str
    role: str
    state: str
    instance_type: str
    public_ip: str
    launched: datetime | None
    deadline: str


@dataclass
class RegionStatus:
    region: str
    dcs: list[str]
    instances: list[Instance] = field(default_factory=list)
    vpcs: dict[str, list[str]] = field(default_factory=dict)  # experiment_id => VPC ids
    error: str | None = None


def _tags(resource: dict) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def _filters(experiment_id: str | None) -> list[dict]:
    filters = [{"Name": f"tag:{PROJECT_TAG[0]}", "Values": [PROJECT_TAG[1]]}]
    if experiment_id:
        filters.append({"Name": "tag:experiment_id", "Values": [experiment_id]})
    return filters


def region_status(client, region: str, dcs: list[str], experiment_id: str | None) -> RegionStatus:
    """Instances (not terminated) and VPCs of k2bench in one region, through an EC2 client."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    out = RegionStatus(region=region, dcs=dcs)
    try:
        pages = client.get_paginator("describe_instances").paginate(
            Filters=_filters(experiment_id) + [{"Name": "instance-state-name", "Values": LIVE_STATES}])
        for page in pages:
            for reservation in page["Reservations"]:
                for i in reservation["Instances"]:
                    tags = _tags(i)
                    out.instances.append(Instance(
                        id=i["InstanceId"], name=tags.get("Name", "-"), experiment_id=tags.get("experiment_id", "-"),
                        dc=tags.get("dc", "-"), role=tags.get("role", "-"), state=i["State"]["Name"],
                        instance_type=i.get("InstanceType", "-"), public_ip=i.get("PublicIpAddress", "-"),
                        launched=i.get("LaunchTime"), deadline=tags.get("deadline", "-")))
        for page in client.get_paginator("describe_vpcs").paginate(Filters=_filters(experiment_id)):
            for vpc in page["Vpcs"]:
                out.vpcs.setdefault(_tags(vpc).get("experiment_id", "-"), []).append(vpc["VpcId"])
    except NoCredentialsError:
        raise StatusError(NO_CREDENTIALS) from None
    except ClientError as e:
        err = e.response.get("Error", {})
        out.error = f"{err.get('Code', 'error')}: {err.get('Message', str(e))}"
    except BotoCoreError as e:  # no network, endpoint unknown, ...
        out.error = str(e)
    out.instances.sort(key=lambda i: (i.experiment_id, i.dc, i.role != "server", _index(i.name), i.name))
    return out


def _index(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def collect(by_region: dict[str, list[str]], experiment_id: str | None,
            client_for: Callable[[str], object]) -> list[RegionStatus]:
    return [region_status(client_for(region), region, dcs, experiment_id) for region, dcs in by_region.items()]


# ---- how it reads ------------------------------------------------------------------------


def render(statuses: list[RegionStatus], experiment_id: str | None, where: str) -> str:
    scope = f"experiment_id={experiment_id}" if experiment_id else "every experiment"
    lines = [f"k2bench on EC2 (tag project=k2bench, {scope}; regions of datacenters from {where}):"]
    live = [i for s in statuses for i in s.instances]
    for s in statuses:
        head = f"{s.region} ({', '.join(s.dcs)})" if s.dcs else s.region
        if s.error:
            lines.append(f"{head}: could not look: {s.error}")
            continue
        counts = {}
        for i in s.instances:
            counts[i.state] = counts.get(i.state, 0) + 1
        states = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        lines.append(f"{head}: {len(s.instances)} instances ({states})" if s.instances
                     else f"{head}: no instances")
        for i in s.instances:
            launched = i.launched.strftime("%Y-%m-%d %H:%M UTC") if i.launched else "-"
            lines.append(f"  {i.experiment_id:<16} {i.name:<18} {i.state:<13} {i.instance_type:<12} "
                         f"{i.public_ip:<15} launched {launched}  terminates {i.deadline}")
        for exp, ids in sorted(s.vpcs.items()):
            lines.append(f"  {exp:<16} {len(ids)} VPC ({', '.join(sorted(ids))}): free; make ec2-down removes it")
    billing = [i for i in live if i.state not in ("stopped",)]
    experiments = sorted({i.experiment_id for i in live})
    if live:
        lines.append(f"Total: {len(live)} instances, {len(billing)} of them billed by the hour "
                     f"(experiments: {', '.join(experiments)}).")
        lines.append("Remove them: make ec2-down (with the state); without it:")
        for s in statuses:
            if s.instances:
                ids = " ".join(i.id for i in s.instances)
                lines.append(f"  aws ec2 terminate-instances --region {s.region} --instance-ids {ids}")
    else:
        lines.append("Total: no k2bench instances.")
    failed = [s.region for s in statuses if s.error]
    if failed:
        lines.append(f"Not looked at: {', '.join(failed)} (see above).")
    return "\n".join(lines)


# ---- main --------------------------------------------------------------------------------


def main(argv: list[str], env: dict | None = None) -> int:
    env = dict(os.environ) if env is None else env
    parser = argparse.ArgumentParser(prog="ec2_status.py", description=__doc__.splitlines()[0])
    parser.add_argument("--experiment-id", help="only this experiment (tag experiment_id); default: all")
    parser.add_argument("--region", action="append", default=[],
                        help="look in this region too (repeatable)")
    args = parser.parse_args(argv)
    try:
        import boto3
        from botocore.exceptions import BotoCoreError, ProfileNotFound
    except ImportError:
        print("ec2-status: boto3 is missing: run it with the project's virtualenv (make venv; "
              ".venv/bin/python terraform/ec2_status.py) or use make ec2-status", file=sys.stderr)
        return 2
    try:
        dcs, where = datacenters(env)
        by_region: dict[str, list[str]] = {}
        for dc, region in dcs.items():
            by_region.setdefault(region, []).append(dc)
        for region in args.region:
            by_region.setdefault(region, [])
        try:
            session = boto3.session.Session()
            if session.get_credentials() is None:
                raise StatusError(NO_CREDENTIALS)
        except ProfileNotFound as e:
            raise StatusError(f"ec2-status: {e}: fix AWS_PROFILE or ~/.aws/config") from None
        except BotoCoreError as e:
            raise StatusError(f"ec2-status: AWS credentials: {e}") from None
        statuses = collect(by_region, args.experiment_id, lambda r: session.client("ec2", region_name=r))
    except StatusError as e:
        print(str(e), file=sys.stderr)
        return 2
    print(render(statuses, args.experiment_id, where))
    return 1 if any(s.error for s in statuses) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
