"""Test hosts for the remote path: machines that Ansible and the Fabric backend reach over
SSH exactly like cloud machines, made on this machine from network namespaces.

Each host is a network namespace with its own address on a bridge (10.77.0.0/24), running
its own sshd; processes started over SSH live in that namespace and listen on its address.
They share this machine's filesystem and kernel, so each gets its own remote directory and
kernel tuning is off for them. Everything made is recorded and removed again, processes by
pid (``ip netns pids``), never by name.

    with TestHosts(3, workdir) as hosts:
        hosts.inventory_file   # k2bench inventory JSON (provider "test", latency "embedded")
        hosts.known_hosts      # their host keys
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SUBNET = "10.77.0"
BRIDGE = "k2bbr0"
SSHD = "/usr/sbin/sshd"
DCS = ["VA", "CA", "SP", "LDN", "TYO", "SG"]


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=check)


class TestHosts:
    __test__ = False  # not a pytest test class

    def __init__(self, count: int, workdir: Path, prefix: str = "k2bh"):
        self.count = count
        self.workdir = Path(workdir)
        self.prefix = prefix
        self.names = [f"{prefix}{i + 1}" for i in range(count)]
        self.ips = [f"{SUBNET}.{i + 1}" for i in range(count)]
        self.sshd: dict[str, subprocess.Popen] = {}
        self.made_bridge = False
        self.made_ns: list[str] = []
        self.key = self.workdir / "id_ed25519"
        self.known_hosts = self.workdir / "known_hosts"
        self.inventory_file = self.workdir / "inventory.json"

    # ------------------------------------------------------------------ setup

    def __enter__(self) -> "TestHosts":
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _setup(self) -> None:
        if os.geteuid() != 0:
            raise RuntimeError("test hosts need root (network namespaces); run as root")
        if not Path(SSHD).exists():
            raise RuntimeError(f"{SSHD} is missing: `make deploy-test` installs openssh-server")
        self.workdir.mkdir(parents=True, exist_ok=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        self._leftovers()
        sh("ip", "link", "add", BRIDGE, "type", "bridge")
        self.made_bridge = True
        sh("ip", "addr", "add", f"{SUBNET}.254/24", "dev", BRIDGE)
        sh("ip", "link", "set", BRIDGE, "up")
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key))
        authorized = self.workdir / "authorized_keys"
        shutil.copy(f"{self.key}.pub", authorized)
        authorized.chmod(0o600)
        known = []
        for name, ip in zip(self.names, self.ips):
            self._namespace(name, ip)
            hostkey = self.workdir / f"{name}_host_ed25519"
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey))
            known.append(f"{ip} {Path(f'{hostkey}.pub').read_text().split(' ', 2)[0]} "
                         f"{Path(f'{hostkey}.pub').read_text().split(' ', 2)[1]}")
            config = self.workdir / f"{name}_sshd_config"
            config.write_text("\n".join([
                f"ListenAddress {ip}", "Port 22", f"HostKey {hostkey}", f"PidFile {self.workdir}/{name}_sshd.pid",
                f"AuthorizedKeysFile {authorized}", "PermitRootLogin prohibit-password",
                "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
                "StrictModes no", "Subsystem sftp internal-sftp", "LogLevel ERROR", ""]))
            log = open(self.workdir / f"{name}_sshd.log", "w")
            self.sshd[name] = subprocess.Popen(
                ["ip", "netns", "exec", name, SSHD, "-D", "-e", "-f", str(config)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.known_hosts.write_text("\n".join(known) + "\n")
        for name, ip in zip(self.names, self.ips):
            self._await_ssh(name, ip)
        self.inventory_file.write_text(json.dumps(self.inventory(), indent=2) + "\n")

    def _namespace(self, name: str, ip: str) -> None:
        veth, peer = f"{name}-v", f"{name}-p"
        sh("ip", "netns", "add", name)
        self.made_ns.append(name)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
        sh("ip", "link", "set", peer, "master", BRIDGE)
        sh("ip", "link", "set", peer, "up")
        sh("ip", "link", "set", veth, "netns", name)
        sh("ip", "-n", name, "addr", "add", f"{ip}/24", "dev", veth)
        sh("ip", "-n", name, "link", "set", veth, "up")
        sh("ip", "-n", name, "link", "set", "lo", "up")

    def _await_ssh(self, name: str, ip: str, timeout_s: float = 20) -> None:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.sshd[name].poll() is not None:
                log = (self.workdir / f"{name}_sshd.log").read_text()
                raise RuntimeError(f"sshd of {name} exited: {log.strip()[-500:]}")
            try:
                with socket.create_connection((ip, 22), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"sshd of {name} ({ip}:22) did not come up within {timeout_s:.0f} s")

    def _leftovers(self) -> None:
        """Removes hosts a killed earlier run left behind (same names only)."""
        existing = sh("ip", "netns", "list", check=False).stdout.split()
        for name in self.names:
            if name in existing:
                self._kill_namespace_processes(name)
                sh("ip", "netns", "del", name, check=False)
            for link in (f"{name}-v", f"{name}-p"):  # a veth left in this namespace
                sh("ip", "link", "del", link, check=False)
        if sh("ip", "link", "show", BRIDGE, check=False).returncode == 0:
            sh("ip", "link", "del", BRIDGE, check=False)

    # ------------------------------------------------------------------ what tests use

    def inventory(self) -> dict:
        """Three machines for six datacenters: each machine holds two of them, with a server
        and a client role in each (the schema allows a machine in several datacenters)."""
        dcs = {}
        for i, dc in enumerate(DCS):
            m = i % self.count
            host = {"public_ip": self.ips[m], "private_ip": self.ips[m], "ssh_port": 22,
                    "remote_dir": str(self.workdir / "remote" / self.names[m])}
            dcs[dc] = {"hosts": [{"name": self.names[m], "role": "server", **host},
                                 {"name": self.names[m], "role": "client", **host}]}
        return {"schema": "k2bench-inventory/1", "experiment_id": "k2b-test-hosts", "provider": "test",
                "latency": "embedded", "topology_address": "private",
                "ssh": {"user": "root", "private_key": str(self.key)}, "datacenters": dcs}

    def pids(self, name: str) -> list[int]:
        """Every process living in a host's namespace."""
        out = sh("ip", "netns", "pids", name, check=False).stdout.split()
        return [int(p) for p in out if p.isdigit()]

    def stray_pids(self) -> dict[str, list[int]]:
        """Processes in the hosts' namespaces other than their sshd (and its sessions)."""
        out = {}
        for name in self.names:
            ours = {self.sshd[name].pid} if name in self.sshd else set()
            stray = []
            for pid in self.pids(name):
                try:
                    exe = os.readlink(f"/proc/{pid}/exe")
                except OSError:
                    continue
                if pid in ours or exe.endswith("/sshd") or "ip" == Path(exe).name:
                    continue
                stray.append(pid)
            if stray:
                out[name] = stray
        return out

    # ------------------------------------------------------------------ teardown

    def _kill_namespace_processes(self, name: str) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = [int(p) for p in sh("ip", "netns", "pids", name, check=False).stdout.split() if p.isdigit()]
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.time() + 5
            while pids and time.time() < deadline:
                pids = [p for p in pids if Path(f"/proc/{p}").exists()]
                time.sleep(0.1)

    def close(self) -> None:
        for name, proc in self.sshd.items():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(5)
        for name in self.made_ns:
            self._kill_namespace_processes(name)
            sh("ip", "netns", "del", name, check=False)
        self.made_ns = []
        if self.made_bridge:
            sh("ip", "link", "del", BRIDGE, check=False)
            self.made_bridge = False
