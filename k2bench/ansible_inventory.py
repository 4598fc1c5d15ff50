"""The Ansible inventory of a k2bench inventory (k2bench/inventory.py), for ansible/site.yml.

One Ansible host per machine, named by the inventory's host name (the netem role finds its
tc script by that name), in the groups `servers`, `clients` and `dc_<DC>` of every role and
datacenter it has. The machine's variables are set once under `all.hosts`; the groups only
list it.
"""
from __future__ import annotations

import re

from .errors import ConfigError
from .inventory import Inventory

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
