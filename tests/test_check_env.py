"""terraform/check_env.py: one line and exit 2 when credentials or variables are missing."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECK_ENV = ROOT / "terraform" / "check_env.py"

EC2_VARS = {"TF_VAR_experiment_id": "k2b-test", "TF_VAR_operator_cidr": "203.0.113.7/32",
            "TF_VAR_ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE test"}


@pytest.fixture
def tree(tmp_path):
    """A copy of terraform/check_env.py with empty ec2/ and emulab/ beside it, and a HOME."""
    (tmp_path / "terraform" / "ec2").mkdir(parents=True)
    (tmp_path / "terraform" / "emulab").mkdir()
    shutil.copy(CHECK_ENV, tmp_path / "terraform" / "check_env.py")
    (tmp_path / "home").mkdir()
    return tmp_path


def fake_terraform(directory, record):
    """An executable `terraform` in `directory` that appends its arguments and
    TF_VAR_servers_per_dc to `record`, and prints SUMMARY for `output -raw summary`."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "terraform"
    script.write_text(f"""#!/bin/sh
echo "$* servers_per_dc=${{TF_VAR_servers_per_dc-unset}}" >> {record}
case "$*" in *"output -raw summary"*) echo SUMMARY ;; esac
""")
    script.chmod(0o755)
    return directory


def clean_env(tree, **env):
    # Only what the test gives: no AWS_*, TF_VAR_* or HOME leak in from this machine; a
    # stand-in terraform first on PATH.
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("AWS_", "TF_VAR_")) and k not in ("HOME", "SERVERS_PER_DC", "MAKEFLAGS", "MFLAGS")}
    bin_dir = fake_terraform(tree / "bin", tree / "terraform.calls")
    clean.update(HOME=str(tree / "home"), PATH=f"{bin_dir}:{os.environ['PATH']}", AWS_EC2_METADATA_DISABLED="true")
    clean.update(env)
    return clean


def check(tree, target, *flags, **env):
    return subprocess.run([sys.executable, str(tree / "terraform" / "check_env.py"), target, *flags],
                          capture_output=True, text=True, env=clean_env(tree, **env), timeout=30)


def one_line(r):
    assert r.returncode == 2
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    return r.stderr


def test_ec2_without_credentials(tree):
    err = one_line(check(tree, "ec2", **EC2_VARS))
    assert err.startswith("check_env: ec2: missing AWS credentials: set AWS_ACCESS_KEY_ID and "
                          "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or create ~/.aws/credentials")
    assert "variables" not in err


@pytest.mark.parametrize("credentials", [
    {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"},
    {"AWS_PROFILE": "k2bench"},
    "file",
])
def test_ec2_with_credentials_and_variables_passes(tree, credentials):
    env = dict(EC2_VARS)
    if credentials == "file":
        (tree / "home" / ".aws").mkdir()
        (tree / "home" / ".aws" / "credentials").write_text("[default]\n")
    else:
        env.update(credentials)
    r = check(tree, "ec2", **env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_ec2_key_id_without_secret_is_not_credentials(tree):
    err = one_line(check(tree, "ec2", AWS_ACCESS_KEY_ID="AKIAEXAMPLE", **EC2_VARS))
    assert "AWS credentials" in err


def test_ec2_missing_variables_are_named(tree):
    err = one_line(check(tree, "ec2", AWS_PROFILE="k2bench", TF_VAR_experiment_id="k2b-test"))
    assert err == ("check_env: ec2: missing variables operator_cidr, ssh_public_key: set TF_VAR_<name> "
                   "or add them to terraform/ec2/terraform.tfvars (template: terraform.tfvars.example)\n")


def test_ec2_variables_from_tfvars(tree):
    (tree / "terraform" / "ec2" / "terraform.tfvars").write_text(
        '# comment\nexperiment_id = "k2b-test"\noperator_cidr   = "203.0.113.7/32" # mine\n'
        'ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE me@laptop"\nservers_per_dc = 1\n')
    assert check(tree, "ec2", AWS_PROFILE="k2bench").returncode == 0


def test_empty_tfvars_value_counts_as_missing(tree):
    (tree / "terraform" / "ec2" / "terraform.tfvars").write_text('experiment_id = ""\n')
    err = one_line(check(tree, "ec2", AWS_PROFILE="k2bench", TF_VAR_operator_cidr="203.0.113.7/32",
                         TF_VAR_ssh_public_key="ssh-ed25519 AAAA x"))
    assert "missing variables experiment_id:" in err


def test_emulab_without_pem_or_project(tree):
    err = one_line(check(tree, "emulab"))
    assert err.startswith("check_env: emulab: missing Emulab certificate ~/.ssl/emulab.pem: download it")
    assert "variables project, profile:" in err


def test_emulab_with_pem_and_variables_passes(tree):
    (tree / "home" / ".ssl").mkdir()
    (tree / "home" / ".ssl" / "emulab.pem").write_text("pem\n")
    r = check(tree, "emulab", TF_VAR_project="K2Bench", TF_VAR_profile="K2Bench,k2bench")
    assert (r.returncode, r.stderr) == (0, "")


def test_emulab_pem_path_variable(tree):
    (tree / "terraform" / "emulab" / "terraform.tfvars").write_text(
        'project = "K2Bench"\nprofile = "K2Bench,k2bench"\npem_path = "~/certs/me.pem"\n')
    err = one_line(check(tree, "emulab"))
    assert "Emulab certificate ~/certs/me.pem" in err and "variables" not in err
    (tree / "home" / "certs").mkdir()
    (tree / "home" / "certs" / "me.pem").write_text("pem\n")
    assert check(tree, "emulab").returncode == 0


def test_unknown_target(tree):
    r = check(tree, "gcp")
    assert r.returncode == 2 and r.stderr == "usage: check_env.py ec2|emulab [--inventory]\n"


def test_run_targets_also_need_the_inventory(tree):
    """`make ec2-run` before `make ec2-up`: the same one line says to create the machines first."""
    (tree / "home" / ".aws").mkdir(parents=True, exist_ok=True)
    (tree / "home" / ".aws" / "credentials").write_text("[default]\n")
    (tree / "terraform" / "ec2" / "terraform.tfvars").write_text(
        'experiment_id = "k2b-x"\noperator_cidr = "192.0.2.0/24"\nssh_public_key = "ssh-ed25519 AAAA"\n')
    assert check(tree, "ec2").returncode == 0
    err = one_line(check(tree, "ec2", "--inventory"))
    assert "make ec2-up" in err


def test_terraform_must_be_on_path_for_the_targets_that_run_it(tree):
    env = dict(EC2_VARS, AWS_PROFILE="k2bench")
    no_terraform = tree / "empty-bin"
    no_terraform.mkdir()
    path = f"{no_terraform}:{pathlib.Path(sys.executable).parent}"
    err = one_line(check(tree, "ec2", PATH=path, **env))
    assert err == "check_env: ec2: missing terraform: not on PATH: install Terraform 1.5 or newer\n"
    # ec2-run only reads the inventory: no Terraform needed there.
    (tree / "terraform" / "ec2" / "inventory.json").write_text("{}")
    assert check(tree, "ec2", "--inventory", PATH=path, **env).returncode == 0


# ---- the Makefile's ec2 targets, with a stand-in terraform -------------------------------


def make(tree, *args, **env):
    return subprocess.run(["make", "--no-print-directory", "-s", "-C", str(ROOT), *args],
                          capture_output=True, text=True, env=clean_env(tree, **env), timeout=60)


def calls(tree):
    record = tree / "terraform.calls"
    return record.read_text().splitlines() if record.exists() else []


def test_make_ec2_up_without_credentials_stops_before_terraform(tree):
    r = make(tree, "ec2-up", **EC2_VARS)
    assert r.returncode != 0
    assert r.stdout == ""
    (line,) = [x for x in r.stderr.splitlines() if not x.startswith("make")]
    assert line.startswith("check_env: ec2: missing AWS credentials:")
    assert calls(tree) == []  # nothing planned, nothing created


@pytest.mark.parametrize("servers, exported", [(None, "unset"), ("4", "4")])
def test_make_ec2_up_passes_servers_per_dc_and_prints_the_summary(tree, servers, exported):
    args = ["ec2-up"] + ([f"SERVERS_PER_DC={servers}"] if servers else [])
    r = make(tree, *args, AWS_PROFILE="k2bench", **EC2_VARS)
    assert r.returncode == 0, r.stderr
    assert calls(tree) == [f"-chdir=terraform/ec2 init -input=false servers_per_dc={exported}",
                           f"-chdir=terraform/ec2 apply -input=false servers_per_dc={exported}",
                           f"-chdir=terraform/ec2 output -raw summary servers_per_dc={exported}"]
    assert r.stdout.strip().endswith("SUMMARY")


@pytest.mark.parametrize("provider", ["ec2", "emulab"])
def test_make_run_checks_the_shape_with_the_experiment_and_passes_servers_per_dc(tree, provider):
    r = make(tree, "-n", "-o", ".venv/.installed", "-o", "system/launcher/target/k2bench.jar",
             f"{provider}-run", "SERVERS_PER_DC=4", "EXPERIMENT=smoke")
    assert r.returncode == 0, r.stderr
    lines = [x.strip() for x in r.stdout.splitlines()]
    inv = f"terraform/{provider}/inventory.json"
    # deploy checks the experiment's shape against the inventory before Ansible runs
    assert f".venv/bin/k2bench deploy --inventory {inv} --experiment smoke --servers-per-dc 4" in lines
    assert f".venv/bin/k2bench run smoke --inventory {inv} --servers-per-dc 4" in lines
    r = make(tree, "-n", "-o", ".venv/.installed", "-o", "system/launcher/target/k2bench.jar", f"{provider}-run")
    lines = [x.strip() for x in r.stdout.splitlines()]
    assert f".venv/bin/k2bench deploy --inventory {inv} --experiment default" in lines
    assert f".venv/bin/k2bench run default --inventory {inv}" in lines


def test_make_ec2_status_runs_the_status_script(tree):
    r = make(tree, "-n", "-o", ".venv/.installed", "ec2-status")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ".venv/bin/python terraform/ec2_status.py"
