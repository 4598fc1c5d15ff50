"""The Ansible inventory of a k2bench inventory (k2bench/deploy/inventory.py), for ansible/site.yml.

One Ansible host per machine, named by the inventory's host name (the netem role finds its
tc script by that name), in the groups `servers`, `clients` and `dc_<DC>` of every role and
datacenter it has. The machine's variables are set once under `all.hosts`; the groups only
list it. `k2bench_jar_group` names the machines that share a private network: the machine's first
datacenter (one VPC each on EC2, so one per region; two datacenters in one region are two
unpeered VPCs with the same addresses): the jar crosses from the controller once per group
and the others fetch it from that copy (roles/k2bench_install).

`playbook_argv` is how `k2bench deploy` calls ansible-playbook: forks sized to the cluster
and strict host keys from the inventory's known_hosts.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..errors import ConfigError
from .inventory import Inventory

# Ansible runs a task on at most this many machines at once; more would only contend for
# the controller's CPU and its SSH connections.
MAX_FORKS = 50
# A value ssh reads as one word without quoting.
_PLAIN = re.compile(r"[A-Za-z0-9_./:@+,=~-]+")

# Ansible group names are Python identifiers; others are warned about and mangled.
_GROUP = re.compile(r"[A-Za-z0-9_]+")


def to_ansible(inv: Inventory, extra_vars: dict | None = None) -> dict:
    """A YAML inventory as a dict (yaml.safe_dump it). extra_vars go into all.vars and win
    over the ones derived here."""
    for dc in inv.datacenters:
        if not _GROUP.fullmatch(dc):
            raise ConfigError(f"inventory.datacenters.{dc}", f"names the Ansible group dc_{dc}: "
                              "use letters, digits and '_' only")
    machines = inv.machines()
    name_of = {(m.ssh_host, m.ssh_port): m.name for m in machines}
    dcs: dict[str, list[str]] = {m.name: [] for m in machines}
    roles: dict[str, list[str]] = {m.name: [] for m in machines}
    server_dcs: dict[str, list[str]] = {m.name: [] for m in machines}
    groups: dict[str, list[str]] = {"servers": [], "clients": []}
    for dc in inv.datacenters:
        groups[f"dc_{dc}"] = []
    for h in inv.hosts():
        name = name_of[(h.ssh_host, h.ssh_port)]
        for lst, v in ((dcs[name], h.dc), (roles[name], h.role), (groups[f"{h.role}s"], name),
                       (groups[f"dc_{h.dc}"], name)):
            if v not in lst:
                lst.append(v)
        if h.role == "server" and h.dc not in server_dcs[name]:
            server_dcs[name].append(h.dc)

    hosts = {}
    for m in machines:
        v = {"ansible_host": m.ssh_host, "ansible_port": m.ssh_port, "ansible_user": inv.ssh_user}
        if inv.private_key:
            v["ansible_ssh_private_key_file"] = inv.private_key
        v.update({
            "k2bench_dcs": dcs[m.name],
            "k2bench_roles": roles[m.name],
            # The DCs this machine runs servers for: one k2bench-server@<DC> unit each.
            "k2bench_server_dcs": server_dcs[m.name],
            "k2bench_private_ip": m.private_ip,
            "k2bench_public_ip": m.public_ip,
            "k2bench_remote_dir": m.remote_dir,
            "k2bench_jar_group": m.dc,
        })
        hosts[m.name] = v

    all_vars = {"k2bench_latency": inv.latency, "k2bench_experiment_id": inv.experiment_id}
    if inv.provider == "test":
        # Test hosts are sshd processes on the build machine and share its kernel and
        # clock: the playbook must not tune or set them.
        all_vars["k2bench_manage_kernel"] = False
    all_vars.update(extra_vars or {})
    return {"all": {
        "vars": all_vars,
        "hosts": hosts,
        "children": {g: {"hosts": {n: None for n in members}} for g, members in groups.items()},
    }}


def forks(inv: Inventory) -> int:
    """Every machine at once, up to MAX_FORKS."""
    return max(1, min(len(inv.machines()), MAX_FORKS))


def known_hosts(inv: Inventory, inventory_path: str | Path, override: str | None = None) -> Path:
    """The known_hosts file for the inventory's machines: --known-hosts, else the inventory's
    ssh.known_hosts (relative to the inventory's directory). There is no fallback to the
    user's own known_hosts: every key must be one collected for this cluster."""
    if override:
        path, field = Path(override).expanduser(), "--known-hosts"
    else:
        given = getattr(inv, "known_hosts", None)
        if given is None:
            ssh = inv.doc.get("ssh") if isinstance(inv.doc, dict) else None
            given = ssh.get("known_hosts") if isinstance(ssh, dict) else None
        if not given:
            raise ConfigError("ssh.known_hosts", f"{inventory_path} names no known_hosts file for its machines: "
                              "add ssh.known_hosts to the inventory (Terraform writes it) or pass --known-hosts FILE")
        path, field = Path(given).expanduser(), "ssh.known_hosts"
        if not path.is_absolute():
            path = Path(inventory_path).parent / path
    if not path.is_file():
        raise ConfigError(field, f"{path} does not exist: it must hold the host keys of the inventory's machines")
    return path.resolve()


def _ssh_option(key: str, value: str) -> str:
    """`-o key=value` for ssh_common_args, which Ansible splits like a shell and ssh splits
    again at spaces unless the value is in double quotes."""
    if _PLAIN.fullmatch(value):
        return f"-o {key}={value}"
    if '"' in value:
        raise ConfigError(key, f"{value!r}: ssh cannot read a path with a double quote")
    quoted = key + '="' + value + '"'
    return f"-o {shlex.quote(quoted)}"


def playbook_argv(inv: Inventory, hosts_file: str | Path, playbook: str | Path, known_hosts_file: str | Path,
                  ansible_playbook: str | Path = "ansible-playbook") -> list[str]:
    """The ansible-playbook command for an inventory's machines: one fork per machine (up to
    MAX_FORKS) and strict host keys: only the cluster's known_hosts file counts (not the
    user's, not the system's), and an unknown or changed key stops the connection."""
    ssh_args = " ".join([_ssh_option("UserKnownHostsFile", str(known_hosts_file)),
                         "-o GlobalKnownHostsFile=/dev/null", "-o StrictHostKeyChecking=yes"])
    return [str(ansible_playbook), "-i", str(hosts_file), "--forks", str(forks(inv)),
            "--ssh-common-args", ssh_args, str(playbook)]
