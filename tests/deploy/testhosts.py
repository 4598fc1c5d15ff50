"""Test hosts for the remote path: machines that Ansible and the Fabric backend reach over
SSH exactly like cloud machines, made on this machine from network namespaces.

Each host is a network namespace with its own address on a bridge (10.77.0.0/24), running
its own sshd; processes started over SSH live in that namespace and listen on its address.
They share this machine's filesystem and kernel, so each gets its own remote directory and
kernel tuning is off for them. Like a cloud image, they are reached as a non-root user with
passwordless sudo (made for the test, removed afterwards) and verified by their host keys
(the inventory's ``ssh.known_hosts``). A host may be "slow": SSH reaches it through a TCP
proxy that holds back its first bytes for a few seconds. Everything made is recorded and
removed again, processes by pid (``ip netns pids``), never by name.

    with TestHosts(4, workdir, slow={"k2bh4": 3.0}) as hosts:
        hosts.inventory_file   # k2bench inventory JSON (provider "test", latency "embedded")
        hosts.known_hosts      # their host keys
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

SUBNET = "10.77.0"
BRIDGE = "k2bbr0"
SSHD = "/usr/sbin/sshd"
DCS = ["VA", "CA", "SP", "LDN", "TYO", "SG"]
USER = "k2btest"
USER_COMMENT = "k2bench deploy test"  # marks the user as ours (a leftover of a killed run may be removed)
SUDOERS = Path("/etc/sudoers.d") / USER
PROXY_BASE_PORT = 2200


class SlowProxy:
    """A TCP proxy on this machine in front of a host's sshd that holds back the first bytes
    of every connection (sshd's banner) for ``delay_s`` seconds: a host that answers SSH
    slowly."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int], delay_s: float):
        self.target, self.delay_s = target, delay_s
        self.sock = socket.create_server(listen, reuse_port=False)
        self.sock.settimeout(0.5)
        self.closed = False
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        self.conns += [client, upstream]
        time.sleep(self.delay_s)  # nothing passes until then: the client waits for the banner
        threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
        self._pump(upstream, client)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while (data := src.recv(65536)):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass
        self.thread.join(2)


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=check)


class TestHosts:
    __test__ = False  # not a pytest test class

    def __init__(self, count: int, workdir: Path, prefix: str = "k2bh", slow: dict[str, float] | None = None):
        assert count >= 3, "a datacenter's two server hosts and its client host are three machines"
        self.count = count
        self.workdir = Path(workdir)
        self.prefix = prefix
        self.names = [f"{prefix}{i + 1}" for i in range(count)]
        self.ips = [f"{SUBNET}.{i + 1}" for i in range(count)]
        self.slow = dict(slow or {})
        self.sshd: dict[str, subprocess.Popen] = {}
        self.proxies: dict[str, SlowProxy] = {}
        self.made_bridge = False
        self.made_ns: list[str] = []
        self.made_user = False
        self.made_sudoers = False
        # Where the hosts' run directories and the user's home live: readable by the test
        # user (pytest's own temporary directories are private to root).
        self.shared: Path | None = None
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
        if not shutil.which("sudo") or not Path("/etc/sudoers.d").is_dir():
            raise RuntimeError("sudo is missing: `make deploy-test` installs it (the test user logs in with sudo)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        self._leftovers()
        self.shared = Path(tempfile.mkdtemp(prefix="k2b-deploy-test-", dir="/tmp"))
        self.shared.chmod(0o755)
        self._user()
        sh("ip", "link", "add", BRIDGE, "type", "bridge")
        self.made_bridge = True
        sh("ip", "addr", "add", f"{SUBNET}.254/24", "dev", BRIDGE)
        sh("ip", "link", "set", BRIDGE, "up")
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key))
        # sshd reads it as the user: in the shared directory, readable by all (only a public key)
        authorized = self.shared / "authorized_keys"
        shutil.copy(f"{self.key}.pub", authorized)
        authorized.chmod(0o644)
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
        for i, (name, ip) in enumerate(zip(self.names, self.ips)):
            if name in self.slow:
                port = PROXY_BASE_PORT + i + 1
                self.proxies[name] = SlowProxy((f"{SUBNET}.254", port), (ip, 22), self.slow[name])
                key = known[i].split(" ", 1)[1]
                known.append(f"[{SUBNET}.254]:{port} {key}")
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

    def _user(self) -> None:
        """The non-root SSH user with passwordless sudo, as on a cloud image."""
        home = self.shared / "home"
        sh("useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh",
           "--comment", USER_COMMENT, USER)
        self.made_user = True
        sh("usermod", "-p", "*", USER)  # no password, but not locked: sshd refuses locked accounts
        tmp = SUDOERS.with_name(f".{USER}.tmp")
        tmp.write_text(f"{USER} ALL=(ALL) NOPASSWD: ALL\n")
        tmp.chmod(0o440)
        sh("visudo", "-c", "-q", "-f", str(tmp))
        tmp.replace(SUDOERS)
        self.made_sudoers = True
        for sub in ("remote",):
            (self.shared / sub).mkdir(mode=0o755)

    def remote_dir(self, name: str) -> Path:
        return self.shared / "remote" / name

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
        try:
            entry = pwd.getpwnam(USER)
        except KeyError:
            entry = None
        if entry is None and SUDOERS.exists() and SUDOERS.read_text().startswith(f"{USER} "):
            SUDOERS.unlink()
        if entry is not None:
            if entry.pw_gecos != USER_COMMENT:
                raise RuntimeError(f"a user {USER!r} exists that this test did not make; remove or rename it")
            self._remove_user(Path(entry.pw_dir))

    # ------------------------------------------------------------------ what tests use

    def machine(self, m: int) -> dict:
        ip, name = self.ips[m], self.names[m]
        ssh = ({"ssh_host": f"{SUBNET}.254", "ssh_port": PROXY_BASE_PORT + m + 1} if name in self.proxies
               else {"ssh_port": 22})
        return {"name": name, "public_ip": ip, "private_ip": ip, **ssh, "remote_dir": str(self.remote_dir(name))}

    def inventory(self) -> dict:
        """Six datacenters shaped like the default cloud cluster: two server hosts and one
        client host each, on three different machines; with fewer machines than hosts, every
        machine is in several datacenters (the schema allows that under embedded latency)."""
        n = self.count
        dcs = {}
        for i, dc in enumerate(DCS):
            dcs[dc] = {"hosts": [{**self.machine(i % n), "role": "server"},
                                 {**self.machine((i + 1) % n), "role": "server"},
                                 {**self.machine((i + 2) % n), "role": "client"}]}
        return {"schema": "k2bench-inventory/1", "experiment_id": "k2b-test-hosts", "provider": "test",
                "latency": "embedded", "topology_address": "private",
                "ssh": {"user": USER, "private_key": str(self.key), "known_hosts": self.known_hosts.name},
                "datacenters": dcs}

    def link(self, name: str, up: bool) -> None:
        """Cuts (or restores) a host's network: it stops answering, its processes live on."""
        sh("ip", "-n", name, "link", "set", f"{name}-v", "up" if up else "down")

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

    def _remove_user(self, home: Path) -> None:
        SUDOERS.unlink(missing_ok=True)
        SUDOERS.with_name(f".{USER}.tmp").unlink(missing_ok=True)
        sh("userdel", USER, check=False)
        if str(home).startswith("/tmp/k2b-deploy-test-"):
            shutil.rmtree(home.parent, ignore_errors=True)

    def close(self) -> None:
        for proxy in self.proxies.values():
            proxy.close()
        self.proxies = {}
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
        if self.made_user or self.made_sudoers:
            self._remove_user(self.shared / "home")
            self.made_user = self.made_sudoers = False
        if self.shared is not None:
            shutil.rmtree(self.shared, ignore_errors=True)
            self.shared = None
