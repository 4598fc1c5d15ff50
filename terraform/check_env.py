#!/usr/bin/env python3
"""Before `terraform apply`: are the credentials and required variables there?

    python3 terraform/check_env.py ec2      # or: emulab
    python3 terraform/check_env.py ec2 --inventory   # also: has `make ec2-up` written the inventory?

Exit 0 when all is there; otherwise exit 2 with one line naming what is missing and how
to provide it, so a make target stops before Terraform asks interactively or fails
halfway. Without --inventory (the targets that run Terraform), Terraform itself must be
on PATH. Standard library only.

A variable counts as given when TF_VAR_<name> is set and non-empty, or when
terraform/<target>/terraform.tfvars assigns it (`name = "value"`).
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Variables without a default in <target>/variables.tf.
REQUIRED = {
    "ec2": ("experiment_id", "operator_cidr", "ssh_public_key"),
    "emulab": ("project", "profile"),
}

QUOTED = re.compile(r'^\s*([A-Za-z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"')
BARE = re.compile(r'^\s*([A-Za-z_]\w*)\s*=\s*([^\s#"]+)')


def tfvars(path: Path) -> dict[str, str]:
    """Top-level `name = "value"` and `name = value` lines of a .tfvars file."""
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        m = QUOTED.match(line) or BARE.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def variable(name: str, env: dict, given: dict) -> str | None:
    value = env.get(f"TF_VAR_{name}") or given.get(name)
    return value if value else None


def aws_credentials(env: dict, home: Path) -> bool:
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return True
    if env.get("AWS_PROFILE"):
        return True
    credentials = Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials")
    return credentials.is_file()


def problems(target: str, env: dict, home: Path, root: Path = HERE) -> list[str]:
    """What is missing for `target`, one phrase each (empty: all there)."""
    tfvars_path = root / target / "terraform.tfvars"
    given = tfvars(tfvars_path)
    out = []
    if target == "ec2" and not aws_credentials(env, home):
        out.append("AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, "
                   "or create ~/.aws/credentials (aws configure)")
    if target == "emulab":
        pem = variable("pem_path", env, given) or "~/.ssl/emulab.pem"
        path = Path(pem.replace("~", str(home), 1) if pem.startswith("~") else pem)
        if not path.is_file():
            out.append(f"Emulab certificate {pem}: download it from the portal (Download Credentials) "
                       "to ~/.ssl/emulab.pem or set TF_VAR_pem_path")
    missing = [name for name in REQUIRED[target] if not variable(name, env, given)]
    if missing:
        out.append(f"variables {', '.join(missing)}: set TF_VAR_<name> or add them to "
                   f"terraform/{target}/terraform.tfvars (template: terraform.tfvars.example)")
    return out


def main(argv: list[str]) -> int:
    want_inventory = "--inventory" in argv
    argv = [a for a in argv if a != "--inventory"]
    if len(argv) != 1 or argv[0] not in REQUIRED:
        print(f"usage: check_env.py {'|'.join(REQUIRED)} [--inventory]", file=sys.stderr)
        return 2
    found = problems(argv[0], dict(os.environ), Path.home())
    if want_inventory and not (HERE / argv[0] / "inventory.json").is_file():
        found.append(f"terraform/{argv[0]}/inventory.json: create the machines first with `make {argv[0]}-up`")
    if not want_inventory and shutil.which("terraform") is None:
        found.append("terraform: not on PATH: install Terraform 1.5 or newer")
    if found:
        print(f"check_env: {argv[0]}: missing " + " | ".join(found), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
