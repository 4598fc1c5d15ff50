"""The inventory: which machines a cluster has, per datacenter and role.

Terraform for EC2 and for Emulab both output this JSON, the deployment test writes it for
its local test hosts, Ansible's inventory is generated from it, and the orchestrator's
remote deployment places servers and clients by it:

    {
      "schema": "k2bench-inventory/1",
      "experiment_id": "k2b-demo",          # tags every cloud resource
      "provider": "ec2",                    # ec2 | emulab | test
      "latency": "real",                    # real (EC2 regions) | netem (tc) | embedded (in-process)
      "topology_address": "public",         # address servers give each other: public | private
      "ssh": {"user": "ubuntu", "private_key": "~/.ssh/id_ed25519",
              "known_hosts": "known_hosts"}, # every host's key; relative to this file
      "remote_dir": "/var/lib/k2bench",     # optional; where runs live on the hosts
      "datacenters": {
        "VA": {"region": "us-east-1",       # region optional (Emulab has none)
               "hosts": [{"name": "va-server-0", "role": "server", "public_ip": "3.80.1.2",
                          "private_ip": "10.0.1.10", "ssh_port": 22}, ...]},
        ...
      }
    }

A host has role ``server`` or ``client``; ``ssh_port`` defaults to 22 and ``ssh_host``
(where SSH connects) to ``public_ip``. One machine may appear in several datacenters
(the test hosts do); a host's ``remote_dir`` overrides the inventory's.

``ssh.known_hosts`` names an OpenSSH known_hosts file with the key of every host (a
relative path is taken from the inventory file's directory). Remote runs verify every
host against it and refuse unknown keys; Terraform writes it next to inventory.json.
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

SCHEMA = "k2bench-inventory/1"
PROVIDERS = ("ec2", "emulab", "test")
LATENCIES = ("real", "netem", "embedded")
ROLES = ("server", "client")


@dataclass(frozen=True)
class Host:
    name: str
    dc: str
    role: str
    public_ip: str
    private_ip: str
    ssh_host: str
    ssh_port: int
    remote_dir: str


@dataclass(frozen=True)
class Inventory:
    experiment_id: str
    provider: str
    latency: str
    topology_address: str
    ssh_user: str
    private_key: str | None
    known_hosts: str | None  # path of the hosts' known_hosts file (absolute when loaded from a file)
    datacenters: dict[str, list[Host]]
    regions: dict[str, str | None]
    doc: dict

    def hosts(self, dc: str | None = None, role: str | None = None) -> list[Host]:
        return [h for d, hs in self.datacenters.items() if dc in (None, d)
                for h in hs if role in (None, h.role)]

    def machines(self) -> list[Host]:
        """One Host per distinct machine (ssh endpoint), in inventory order."""
        seen, out = set(), []
        for h in self.hosts():
            if (h.ssh_host, h.ssh_port) not in seen:
                seen.add((h.ssh_host, h.ssh_port))
                out.append(h)
        return out

    def server_hosts_per_dc(self) -> dict[str, int]:
        return {dc: sum(1 for h in hs if h.role == "server") for dc, hs in self.datacenters.items()}

    def address(self, h: Host) -> str:
        """The address servers use to reach this host."""
        return h.public_ip if self.topology_address == "public" else h.private_ip


def _str(doc: dict, key: str, field: str, default=None) -> str:
    v = doc.get(key, default)
    if not isinstance(v, str) or not v:
        raise ConfigError(field, f"must be a non-empty string, got {v!r}")
    return v


def _ip(doc: dict, key: str, field: str) -> str:
    v = _str(doc, key, field)
    try:
        ipaddress.ip_address(v)
    except ValueError:
        raise ConfigError(field, f"{v!r} is not an IP address") from None
    return v


def parse(doc: dict, source: str = "inventory", base_dir: str | Path | None = None) -> Inventory:
    """Validates an inventory document; a ConfigError names the first bad field. A relative
    ``ssh.known_hosts`` is taken from ``base_dir`` (the inventory file's directory)."""
    if not isinstance(doc, dict):
        raise ConfigError(source, "must be a JSON object (see k2bench/deploy/inventory.py)")
    if doc.get("schema") != SCHEMA:
        raise ConfigError("schema", f"must be {SCHEMA!r}, got {doc.get('schema')!r}")
    provider = _str(doc, "provider", "provider")
    if provider not in PROVIDERS:
        raise ConfigError("provider", f"must be one of {', '.join(PROVIDERS)}, got {provider!r}")
    latency = doc.get("latency", {"ec2": "real", "emulab": "netem", "test": "embedded"}[provider])
    if latency not in LATENCIES:
        raise ConfigError("latency", f"must be one of {', '.join(LATENCIES)}, got {latency!r}")
    address = doc.get("topology_address", "public" if provider == "ec2" else "private")
    if address not in ("public", "private"):
        raise ConfigError("topology_address", f"must be public or private, got {address!r}")
    ssh = doc.get("ssh", {})
    if not isinstance(ssh, dict):
        raise ConfigError("ssh", "must be a mapping with user and optionally private_key")
    user = _str(ssh, "user", "ssh.user")
    key = ssh.get("private_key")
    known = ssh.get("known_hosts")
    if known is not None:
        if not isinstance(known, str) or not known:
            raise ConfigError("ssh.known_hosts", f"must be the path of a known_hosts file, got {known!r}")
        known_path = Path(known).expanduser()
        if not known_path.is_absolute() and base_dir is not None:
            known_path = Path(base_dir) / known_path
        known = str(known_path)
    remote_dir = doc.get("remote_dir", "/var/lib/k2bench")
    dcs = doc.get("datacenters")
    if not isinstance(dcs, dict) or not dcs:
        raise ConfigError("datacenters", "must map datacenter names to {hosts: [...]}")
    out: dict[str, list[Host]] = {}
    regions: dict[str, str | None] = {}
    names: dict[str, tuple[str, int]] = {}
    for dc, d in dcs.items():
        f = f"datacenters.{dc}"
        if not isinstance(d, dict) or not isinstance(d.get("hosts"), list) or not d["hosts"]:
            raise ConfigError(f"{f}.hosts", "must be a non-empty list of hosts")
        regions[dc] = d.get("region")
        hosts = []
        for i, h in enumerate(d["hosts"]):
            hf = f"{f}.hosts[{i}]"
            if not isinstance(h, dict):
                raise ConfigError(hf, "must be a mapping")
            name = _str(h, "name", f"{hf}.name")
            role = _str(h, "role", f"{hf}.role")
            if role not in ROLES:
                raise ConfigError(f"{hf}.role", f"must be server or client, got {role!r}")
            public, private = _ip(h, "public_ip", f"{hf}.public_ip"), _ip(h, "private_ip", f"{hf}.private_ip")
            port = h.get("ssh_port", 22)
            if not isinstance(port, int) or not 0 < port < 65536:
                raise ConfigError(f"{hf}.ssh_port", f"must be a port number, got {port!r}")
            host = Host(name, dc, role, public, private, h.get("ssh_host", public), port,
                        h.get("remote_dir", remote_dir))
            prev = names.get(name)
            if prev is not None and prev != (host.ssh_host, host.ssh_port):
                raise ConfigError(f"{hf}.name", f"{name!r} names two different machines")
            names[name] = (host.ssh_host, host.ssh_port)
            hosts.append(host)
        if not any(h.role == "server" for h in hosts):
            raise ConfigError(f"{f}.hosts", "has no server host")
        if not any(h.role == "client" for h in hosts):
            raise ConfigError(f"{f}.hosts", "has no client host")
        out[dc] = hosts
    return Inventory(_str(doc, "experiment_id", "experiment_id"), provider, latency, address, user,
                     key, known, out, regions, doc)


def load(path: str | Path) -> Inventory:
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError("--inventory", f"{p} does not exist") from None
    except json.JSONDecodeError as e:
        raise ConfigError("--inventory", f"{p} is not JSON: {e.msg} at line {e.lineno}") from None
    return parse(doc, str(p), base_dir=p.resolve().parent)
