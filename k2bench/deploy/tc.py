"""The per-host tc script that emulates WAN latency on a cluster (docs/clusters.md).

A pure function of (inventory, RTT matrix, host): on the interface that holds the host's
private address, an HTB root with one class per peer datacenter, each with a netem leaf
delaying by RTT/2 (the peer delays the way back by the other half), and u32 filters
sending every address of the peer's machines to its class. Traffic inside the datacenter
matches no filter and leaves undelayed. The Ansible role `netem` copies the scripts that
`write_scripts` writes, runs them, and checks the RTTs of the `.expect.json` beside them.
`reset_script` undoes a host's configuration (`make netem-reset`, ansible/netem-reset.yml).
The matrix is the experiment's: `rtt_matrix` of its topology (file plus overrides).
"""
from __future__ import annotations

import ipaddress
import json
import math
import re
from decimal import Decimal
from pathlib import Path

from ..errors import ConfigError
from .inventory import Host, Inventory

# HTB needs a rate per class; this one is far above any NIC of ours, so classes only delay.
HTB_RATE = "10gbit"
# netem's default queue is 1000 packets; at 166 ms one-way delay a busy link holds more
# than that in flight, and netem would drop them.
NETEM_LIMIT = 100000
# Host names become file names (<name>.sh) and Ansible host names; DC names go into comments.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _number(v, field: str) -> Decimal:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ConfigError(field, f"must be a non-negative number of milliseconds, got {v!r}")
    # str() of a float is its shortest repr (14.6 -> "14.6"), so halving it in decimal
    # gives 7.3, never 7.2999999; ints stay exact.
    return Decimal(str(v))


def _ms(d: Decimal) -> str:
    return format(d.normalize(), "f")


def _matrix(inventory: Inventory, rtt_ms) -> dict[tuple[str, str], Decimal]:
    """RTT per ordered pair of the inventory's datacenters; each pair may be given once."""
    if not isinstance(rtt_ms, dict):
        raise ConfigError("rtt_ms", "must map datacenter -> {datacenter: RTT in ms}")
    dcs = list(inventory.datacenters)
    given: dict[tuple[str, str], Decimal] = {}
    for a, row in rtt_ms.items():
        if a not in inventory.datacenters:
            raise ConfigError(f"rtt_ms.{a}", f"unknown datacenter: the inventory has {', '.join(dcs)}")
        if not isinstance(row, dict):
            raise ConfigError(f"rtt_ms.{a}", "must map datacenter -> RTT in ms")
        for b, v in row.items():
            if b not in inventory.datacenters:
                raise ConfigError(f"rtt_ms.{a}.{b}", f"unknown datacenter: the inventory has {', '.join(dcs)}")
            rtt = _number(v, f"rtt_ms.{a}.{b}")
            if a == b:
                if rtt != 0:
                    raise ConfigError(f"rtt_ms.{a}.{b}", "must be 0: tc does not delay traffic inside a datacenter")
                continue
            if (b, a) in given and given[(b, a)] != rtt:
                raise ConfigError(f"rtt_ms.{a}.{b}", f"asymmetric: {v} but rtt_ms.{b}.{a} is "
                                  f"{_ms(given[(b, a)])}; the matrix must be symmetric")
            given[(a, b)] = given[(b, a)] = rtt
    for i, a in enumerate(dcs):
        for b in dcs[i + 1:]:
            if (a, b) not in given:
                raise ConfigError(f"rtt_ms.{a}.{b}", f"missing: give the RTT between {a} and {b} "
                                  f"(rtt_ms.{a}.{b} or rtt_ms.{b}.{a})")
    return given


def _check_machines(inventory: Inventory) -> None:
    """tc shapes a machine's traffic per destination DC, so each machine and address has one DC."""
    dc_of_machine: dict[tuple[str, int], str] = {}
    dc_of_address: dict[str, str] = {}
    for dc, hosts in inventory.datacenters.items():
        if not NAME.fullmatch(dc):
            raise ConfigError(f"inventory.datacenters.{dc}", "a datacenter name must be letters, digits, '.', '_' or '-'")
        for i, h in enumerate(hosts):
            field = f"inventory.datacenters.{dc}.hosts[{i}]"
            if not NAME.fullmatch(h.name):
                raise ConfigError(f"{field}.name", f"{h.name!r}: use letters, digits, '.', '_' and '-' "
                                  "(it names the host's script file)")
            other = dc_of_machine.setdefault((h.ssh_host, h.ssh_port), dc)
            if other != dc:
                raise ConfigError(field, f"machine {h.name!r} ({h.ssh_host}:{h.ssh_port}) is also in {other}; "
                                  "tc needs one datacenter per machine (use latency embedded for such inventories)")
            for key in ("private_ip", "public_ip"):
                ip = getattr(h, key)
                if ipaddress.ip_address(ip).version != 4:
                    raise ConfigError(f"{field}.{key}", f"{ip} is IPv6; the tc filters match IPv4 only")
                other = dc_of_address.setdefault(ip, dc)
                if other != dc:
                    raise ConfigError(f"{field}.{key}", f"{ip} is also an address in {other}; "
                                      "tc needs one datacenter per address")


def _host_check(inventory: Inventory, host: Host) -> None:
    if host not in inventory.hosts():
        raise ConfigError("host", f"{host.name!r} is not a host of the inventory")


def _peer_addresses(inventory: Inventory, dc: str) -> list[str]:
    out: list[str] = []
    for h in inventory.hosts(dc):
        for ip in (h.private_ip, h.public_ip):
            if ip not in out:
                out.append(ip)
    return out


def _find_dev(host: Host) -> list[str]:
    """Script lines that set $dev to the interface holding the host's private address."""
    return [
        f"ip_addr={host.private_ip}",
        "dev=$(ip -o -4 addr show | awk -v ip=\"$ip_addr\" '{split($4, a, \"/\"); if (a[1] == ip) {print $2; exit}}')",
        "if [ -z \"$dev\" ]; then",
        f"  echo \"k2bench tc: no interface of {host.name} holds $ip_addr (its private_ip in the inventory)\" >&2",
        "  exit 1",
        "fi",
    ]


def script(inventory: Inventory, rtt_ms: dict[str, dict[str, float]], host: Host) -> str:
    """The bash script that sets up `host`'s tc configuration; safe to run again."""
    matrix = _matrix(inventory, rtt_ms)
    _check_machines(inventory)
    _host_check(inventory, host)
    lines = [
        "#!/usr/bin/env bash",
        f"# tc for {host.name} in {host.dc}, experiment {inventory.experiment_id!r}: generated by",
        "# k2bench/deploy/tc.py from the RTT matrix and the inventory. One HTB class per peer",
        "# datacenter delays by RTT/2 (netem); the peer delays the way back by the other half.",
        "set -euo pipefail",
        "",
        *_find_dev(host),
        "",
        "# Delete first, so that a second run replaces the configuration instead of failing;",
        "# an interface with its default qdisc has nothing to delete, which is fine.",
        "if ! out=$(tc qdisc del dev \"$dev\" root 2>&1); then",
        "  case \"$out\" in",
        "    *\"No such file or directory\"* | *\"handle of zero\"*) ;;",
        "    *) echo \"k2bench tc: deleting the root qdisc of $dev failed: $out\" >&2; exit 1 ;;",
        "  esac",
        "fi",
        "",
        "# Traffic that no filter below matches (this datacenter's own) is not delayed.",
        "tc qdisc add dev \"$dev\" root handle 1: htb",
    ]
    for n, peer in enumerate(inventory.datacenters, start=1):
        if peer == host.dc:
            continue
        rtt = matrix[(host.dc, peer)]
        # Class and handle ids are hexadecimal to tc; numbering by the DC's index keeps a
        # DC's class id the same on every host.
        cls = f"1:{n:x}"
        lines += [
            "",
            f"# {peer}: RTT {_ms(rtt)} ms",
            f"tc class add dev \"$dev\" parent 1: classid {cls} htb rate {HTB_RATE}",
            f"tc qdisc add dev \"$dev\" parent {cls} handle {n + 1:x}: netem delay {_ms(rtt / 2)}ms limit {NETEM_LIMIT}",
        ]
        lines += [f"tc filter add dev \"$dev\" parent 1: protocol ip prio 1 u32 match ip dst {ip}/32 flowid {cls}"
                  for ip in _peer_addresses(inventory, peer)]
    lines += ["", "echo \"k2bench tc: applied on $dev\"", ""]
    return "\n".join(lines)


def _json_number(d: Decimal) -> int | float:
    return int(d) if d == d.to_integral_value() else float(d)


def expected_rtts(inventory: Inventory, rtt_ms: dict[str, dict[str, float]], host: Host) -> list[dict]:
    """What `host` should measure after its script ran: one peer machine per other DC (its
    first server), by the private address that the tc filters match."""
    matrix = _matrix(inventory, rtt_ms)
    _check_machines(inventory)
    _host_check(inventory, host)
    out = []
    for peer in inventory.datacenters:
        if peer != host.dc:
            target = inventory.hosts(peer, "server")[0]
            out.append({"peer_dc": peer, "peer_ip": target.private_ip,
                        "rtt_ms": _json_number(matrix[(host.dc, peer)])})
    return out


def write_scripts(inventory: Inventory, rtt_ms: dict[str, dict[str, float]], out_dir: str | Path) -> list[Path]:
    """Writes `<host name>.sh` and `<host name>.expect.json` for every machine into out_dir
    (what the Ansible role `netem` reads from `k2bench_tc_dir`); nothing is written when the
    input is bad."""
    machines = inventory.machines()
    files = {}
    for h in machines:
        expect = {"host": h.name, "dc": h.dc, "peers": expected_rtts(inventory, rtt_ms, h)}
        files[f"{h.name}.sh"] = script(inventory, rtt_ms, h)
        files[f"{h.name}.expect.json"] = json.dumps(expect, indent=2) + "\n"
    return _write_atomically(out_dir, files)


def _check_reset_host(inventory: Inventory, host: Host) -> None:
    _host_check(inventory, host)
    if not NAME.fullmatch(host.name):
        raise ConfigError("host", f"{host.name!r}: use letters, digits, '.', '_' and '-' "
                          "(it names the host's script file)")
    if ipaddress.ip_address(host.private_ip).version != 4:
        raise ConfigError("host", f"{host.name}: private_ip {host.private_ip} is IPv6; tc scripts find IPv4 only")


def reset_script(inventory: Inventory, host: Host) -> str:
    """The bash script that removes k2bench's tc configuration from `host`: the root qdisc
    that `script` makes (HTB handle 1: with netem leaves), nothing else. Prints
    "removed" or "nothing to remove", so that a second run is seen to change nothing.
    Needs no RTT matrix, so any inventory can be reset (one whose machines serve several
    datacenters too: such a machine cannot have k2bench's tc, and is left alone)."""
    _check_reset_host(inventory, host)
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# Removes k2bench's tc configuration from {host.name}, experiment {inventory.experiment_id!r}:",
        "# generated by k2bench/deploy/tc.py. Only a root qdisc that k2bench's tc script made (HTB 1:",
        "# with netem leaves) is deleted; the interface goes back to the kernel's default qdisc.",
        "set -euo pipefail",
        "",
        "if ! command -v tc >/dev/null; then",
        "  echo \"k2bench tc: nothing to remove (no tc on this machine)\"",
        "  exit 0",
        "fi",
        "",
        *_find_dev(host),
        "",
        "qdiscs=$(tc qdisc show dev \"$dev\")",
        "if grep -q '^qdisc htb 1: root' <<<\"$qdiscs\" &&",
        "   grep -q '^qdisc netem [0-9a-f]*: parent 1:' <<<\"$qdiscs\"; then",
        "  tc qdisc del dev \"$dev\" root",
        "  echo \"k2bench tc: removed from $dev\"",
        "else",
        "  echo \"k2bench tc: nothing to remove on $dev\"",
        "fi",
        "",
    ])


def _write_atomically(out_dir: str | Path, files: dict[str, str]) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files.items():
        p = out / name
        tmp = p.with_name(f".{name}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755 if name.endswith(".sh") else 0o644)
        tmp.replace(p)  # atomic: a reader never sees half a script
        paths.append(p)
    return paths


def write_reset_scripts(inventory: Inventory, out_dir: str | Path) -> list[Path]:
    """Writes `<host name>.reset.sh` for every machine into out_dir (what the playbook
    ansible/netem-reset.yml runs from `k2bench_tc_dir`); nothing is written on bad input."""
    files = {f"{h.name}.reset.sh": reset_script(inventory, h) for h in inventory.machines()}
    return _write_atomically(out_dir, files)


def rtt_matrix(topology, field: str = "topology") -> dict[str, dict[str, int | float]]:
    """The RTT matrix tc emulates for a topology document (a file of workloads/topologies
    with an experiment's overrides applied): its rtt_ms times its rtt_scale, in exact
    decimal arithmetic. Jitter and intra-datacenter delay exist only in the in-process
    emulation; a topology that asks for them is refused rather than emulated without them."""
    if not isinstance(topology, dict) or not isinstance(topology.get("rtt_ms"), dict):
        raise ConfigError(f"{field}.rtt_ms", "missing: tc needs the topology's RTT matrix (rtt_ms)")
    scale = topology.get("rtt_scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise ConfigError(f"{field}.rtt_scale", f"must be a number > 0, got {scale!r}")
    for key in ("jitter_ms", "intra_dc_delay_ms"):
        v = topology.get(key) or 0
        if v != 0:
            raise ConfigError(f"{field}.{key}", f"is {v}: tc (latency netem) emulates the RTT matrix only; "
                              "set it to 0, or use latency embedded")
    out: dict[str, dict[str, int | float]] = {}
    for a, row in topology["rtt_ms"].items():
        if not isinstance(row, dict):
            raise ConfigError(f"{field}.rtt_ms.{a}", "must map datacenter -> RTT in ms")
        out[a] = {b: _json_number(_number(v, f"{field}.rtt_ms.{a}.{b}") * Decimal(str(scale)))
                  for b, v in row.items()}
    return out
