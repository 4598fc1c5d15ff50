"""terraform/emulab/portal.py against a fake Emulab portal on 127.0.0.1 (plain HTTP and TLS
with a client certificate), and terraform/emulab/profile.py against a stand-in geni-lib."""
import base64
import datetime
import importlib.util
import json
import os
import pathlib
import socket
import ssl
import subprocess
import sys
import threading
import time
import types
import xml.etree.ElementTree as ET
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

import pytest

from k2bench.deploy import inventory as k2inventory

ROOT = pathlib.Path(__file__).resolve().parent.parent
PORTAL = ROOT / "terraform" / "emulab" / "portal.py"
PROFILE = ROOT / "terraform" / "emulab" / "profile.py"
FIXTURES = ROOT / "tests" / "fixtures" / "emulab"
MANIFEST = (FIXTURES / "manifest.xml").read_text()
EXPECTED = json.loads((FIXTURES / "inventory.json").read_text())
AGGREGATE = "urn:publicid:IDN+emulab.net+authority+cm"


def load_portal():
    spec = importlib.util.spec_from_file_location("emulab_portal", PORTAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


portal = load_portal()


class FakePortal:
    """The five portal.* calls, answering {code, value, output} as the real portal does.

    Trouble to inject, consumed in order: ``codes[method]`` is a list of response codes
    answered instead of doing the call (7 refused/busy, 8 timed out, 5 server error);
    ``faults[method]`` a count of XML-RPC faults; ``http`` a list of HTTP-level failures
    for the next requests ("503": HTTP 503, "drop": the connection closes unanswered,
    "lost": the call is done but its answer never sent). ``always[method]`` is a code
    answered forever.
    """

    def __init__(self, statuses=("provisioning", "booting", "ready")):
        self.statuses = list(statuses)
        self.experiments = {}
        self.calls = []
        self.codes, self.faults, self.always, self.http = {}, {}, {}, []
        self.granted = None  # hours extendExperiment grants at most (None: all)

    def _trouble(self, method, version, params):
        self.calls.append((method, version, dict(params)))
        if method in self.always:
            return {"code": self.always[method], "value": 0, "output": "Please try again later"}
        if self.faults.get(method):
            self.faults[method] -= 1
            raise RuntimeError("database connection lost")
        if self.codes.get(method):
            code = self.codes[method].pop(0)
            return {"code": code, "value": 0, "output": {7: "Emulab is busy, try again later",
                                                        8: "Timed out", 5: "Server error"}.get(code, "error")}
        return None

    def startExperiment(self, version, params):
        if (trouble := self._trouble("startExperiment", version, params)) is not None:
            return trouble
        key = f"{params['proj']},{params['name']}"
        if key in self.experiments:
            return {"code": 17, "value": 0, "output": "Experiment already exists"}
        expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=int(params["duration"]))
        self.experiments[key] = {"polls": 0, "expires": expires.replace(microsecond=0)}
        return {"code": 0, "value": "", "output": ""}

    def experimentStatus(self, version, params):
        if (trouble := self._trouble("experimentStatus", version, params)) is not None:
            return trouble
        if params["experiment"] not in self.experiments:
            return {"code": 12, "value": 0, "output": "No such experiment"}
        exp = self.experiments[params["experiment"]]
        status = self.statuses[min(exp["polls"], len(self.statuses) - 1)]
        exp["polls"] += 1
        return {"code": 0, "value": json.dumps({"status": status,
                                                "expires": exp["expires"].strftime("%Y-%m-%dT%H:%M:%SZ")}),
                "output": ""}

    def experimentManifests(self, version, params):
        if (trouble := self._trouble("experimentManifests", version, params)) is not None:
            return trouble
        if params["experiment"] not in self.experiments:
            return {"code": 12, "value": 0, "output": "No such experiment"}
        return {"code": 0, "value": json.dumps({AGGREGATE: MANIFEST}), "output": ""}

    def extendExperiment(self, version, params):
        if (trouble := self._trouble("extendExperiment", version, params)) is not None:
            return trouble
        if params["experiment"] not in self.experiments:
            return {"code": 12, "value": 0, "output": "No such experiment"}
        hours = int(params["wanted"]) if self.granted is None else min(int(params["wanted"]), self.granted)
        self.experiments[params["experiment"]]["expires"] += datetime.timedelta(hours=hours)
        return {"code": 0, "value": "", "output": ""}

    def terminateExperiment(self, version, params):
        if (trouble := self._trouble("terminateExperiment", version, params)) is not None:
            return trouble
        if self.experiments.pop(params["experiment"], None) is None:
            return {"code": 12, "value": 0, "output": "No such experiment"}
        return {"code": 0, "value": "", "output": ""}

    def methods(self):
        return [c[0] for c in self.calls]


METHODS = ("startExperiment", "experimentStatus", "experimentManifests", "extendExperiment", "terminateExperiment")


class Handler(SimpleXMLRPCRequestHandler):
    rpc_paths = ("/usr/testbed",)  # the portal's path; anything else is a 404

    def do_POST(self):
        http = self.server.fake.http
        trouble = http.pop(0) if http else None
        if trouble == "503":
            self.send_response(503, "Service Unavailable")
            self.send_header("Content-length", "0")
            self.end_headers()
            return
        if trouble in ("drop", "lost"):
            if trouble == "lost":  # the portal does the call; its answer never arrives
                length = int(self.headers["content-length"])
                self.server._marshaled_dispatch(self.rfile.read(length))
            self.close_connection = True
            return
        super().do_POST()


def serve(fake, tls_context=None):
    server = SimpleXMLRPCServer(("127.0.0.1", 0), Handler, allow_none=True, logRequests=False)
    server.fake = fake
    if tls_context is not None:
        accept = server.socket.accept

        def get_request():
            conn, addr = accept()
            tls = tls_context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
            try:
                tls.do_handshake()
                return tls, addr
            except OSError:
                # A refused client certificate: the alert is sent; close as a web server does
                # (lingering: read until the client closes), so that it reaches the client. A
                # close with the client's request unread resets the connection, which can
                # lose the alert (one CI run saw only EOFs for 27 s; not reproduced since).
                try:
                    tls.shutdown(socket.SHUT_WR)
                    tls.settimeout(2)
                    while tls.recv(4096):
                        pass
                except OSError:
                    pass
                tls.close()
                raise
        server.get_request = get_request
    for name in METHODS:
        server.register_function(getattr(fake, name), f"portal.{name}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


@pytest.fixture
def fake():
    fake = FakePortal()
    server = serve(fake)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/usr/testbed"
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def pem(tmp_path):
    # Plain HTTP never loads it, but portal.py insists the file is there.
    path = tmp_path / "emulab.pem"
    path.write_text("not used over plain HTTP\n")
    return path


def run(url, *args, env=None, timeout=60):
    full_env = {k: v for k, v in os.environ.items() if k != "K2BENCH_EMULAB_PEM_PASSWORD"}
    full_env.update(K2BENCH_EMULAB_URL=url, **(env or {}))
    return subprocess.run([sys.executable, str(PORTAL), *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout)


def flags(pem, name="k2b-emu"):
    # Fast retries: the tests' portal answers in microseconds.
    return ["--project", "K2Bench", "--name", name, "--pem", str(pem), "--retry-delay", "0.01"]


def ssh_key(kind="ssh-ed25519", seed=b"k"):
    """A syntactically valid OpenSSH public key blob of type ``kind``."""
    blob = len(kind).to_bytes(4, "big") + kind.encode() + (32).to_bytes(4, "big") + (seed * 32)[:32]
    return base64.b64encode(blob).decode()


NODES = {"va-server-0": "155.98.36.101", "va-server-1": "155.98.36.102", "va-client-0": "155.98.36.111",
         "ldn-server-0": "155.98.36.121", "ldn-server-1": "155.98.36.122", "ldn-client-0": "155.98.36.112"}
KEYS = {node: ssh_key(seed=node.encode()) for node in NODES}


@pytest.fixture
def fake_ssh(tmp_path):
    """A stand-in for ssh to the ops host: logs its arguments and prints the published key files."""
    published = tmp_path / "published.keys"
    published.write_text("".join(f"{n} ssh-ed25519 {k}\n" for n, k in KEYS.items()))
    log = tmp_path / "ssh.log"
    script = tmp_path / "fake-ssh"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> {log}\necho --- >> {log}\ncat {published}\n")
    script.chmod(0o755)
    return types.SimpleNamespace(env={"K2BENCH_EMULAB_SSH": str(script)}, log=log, published=published)


def test_start_wait_inventory_terminate(fake, pem, tmp_path, fake_ssh):
    out = tmp_path / "inventory.json"
    bindings = json.dumps({"datacenters": "VA,LDN", "servers_per_dc": "2", "clients_per_dc": "1"})

    r = run(fake.url, "start", *flags(pem), "--profile", "K2Bench,k2bench", "--duration", "4",
            "--bindings", bindings)
    assert r.returncode == 0, r.stderr
    assert "started K2Bench,k2b-emu" in r.stdout

    r = run(fake.url, "wait", *flags(pem), "--interval", "0.01", "--timeout", "30")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split(": ")[2].split(" (")[0] for line in lines] == ["provisioning", "booting", "ready"]

    r = run(fake.url, "inventory", *flags(pem), "--datacenters", "VA,LDN", "--ssh-user", "alice",
            "--ssh-private-key", "~/.ssh/id_ed25519", "--out", str(out), env=fake_ssh.env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc == EXPECTED
    assert (tmp_path / "known_hosts").is_file()
    assert k2inventory.load(out).provider == "emulab"

    r = run(fake.url, "terminate", *flags(pem))
    assert r.returncode == 0, r.stderr
    assert fake.experiments == {}

    assert fake.methods() == ["startExperiment"] + ["experimentStatus"] * 3 + \
        ["experimentManifests", "terminateExperiment"]
    assert all(version == 0.1 for _, version, _ in fake.calls)
    assert fake.calls[0][2] == {"proj": "K2Bench", "name": "k2b-emu", "profile": "K2Bench,k2bench",
                                "duration": "4", "bindings": bindings}
    assert fake.calls[1][2] == {"experiment": "K2Bench,k2b-emu", "asjson": 1}
    assert fake.calls[-1][2] == {"experiment": "K2Bench,k2b-emu"}


def test_manifest_fixture_gives_the_expected_inventory():
    doc = portal.inventory_from_manifests([MANIFEST], experiment_id="k2b-emu", datacenters=["VA", "LDN"],
                                          ssh_user="alice", private_key="~/.ssh/id_ed25519",
                                          known_hosts="known_hosts")
    assert doc == EXPECTED
    inv = k2inventory.parse(doc)
    assert [h.name for h in inv.hosts("VA")] == ["va-server-0", "va-server-1", "va-client-0"]
    assert inv.topology_address == "private" and inv.latency == "netem"
    assert inv.address(inv.hosts("LDN", "server")[1]) == "10.10.2.2"


def test_inventory_without_datacenters_uses_upper_case_prefixes_and_given_user():
    doc = portal.inventory_from_manifests([MANIFEST], experiment_id="x", ssh_user="bob")
    assert list(doc["datacenters"]) == ["LDN", "VA"]  # order nodes first appear in the manifest
    assert doc["ssh"] == {"user": "bob"}
    k2inventory.parse(doc)


@pytest.mark.parametrize("change, message", [
    (("va-server-0", "va-db-0"), "'va-db-0' is not named <dc>-server-<i>"),
    (('ipv4="155.98.36.101"', 'ipv6="::1"'), "'va-server-0' has no control address"),
    (('<ip address="10.10.1.1" type="ipv4" netmask="255.255.0.0"/>', ""), "'va-server-0' has no experiment LAN address"),
])
def test_manifest_problems_name_the_node(change, message):
    with pytest.raises(portal.PortalError, match=message):
        portal.inventory_from_manifests([MANIFEST.replace(*change)], experiment_id="x", ssh_user="alice",
                                        datacenters=["VA", "LDN"])


def test_manifest_missing_a_datacenter_is_an_error():
    with pytest.raises(portal.PortalError, match="no nodes for datacenter.*SG"):
        portal.inventory_from_manifests([MANIFEST], experiment_id="x", ssh_user="alice",
                                        datacenters=["VA", "LDN", "SG"])
    with pytest.raises(portal.PortalError, match="belongs to no datacenter"):
        portal.inventory_from_manifests([MANIFEST], experiment_id="x", ssh_user="alice", datacenters=["VA"])


def test_missing_pem_is_one_line_naming_the_flag(fake, tmp_path):
    r = run(fake.url, "wait", "--project", "K2Bench", "--name", "k2b-emu", "--pem", str(tmp_path / "nope.pem"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1
    assert r.stderr.startswith("portal.py: --pem: ") and "nope.pem is not a readable file" in r.stderr
    assert fake.calls == []


def test_missing_project_is_one_line_naming_the_flag(fake, pem):
    r = run(fake.url, "start", "--name", "k2b-emu", "--pem", str(pem), "--profile", "K2Bench,k2bench")
    assert r.returncode == 2
    assert r.stderr == "portal.py: --project: missing: give your Emulab project id (TF_VAR_project)\n"
    assert fake.calls == []


@pytest.mark.parametrize("extra, field", [
    (["--profile", "no-comma"], "--profile"),
    (["--profile", "P,p", "--duration", "0"], "--duration"),
    (["--profile", "P,p", "--bindings", "[1]"], "--bindings"),
])
def test_bad_start_flags_name_the_flag(fake, pem, extra, field):
    r = run(fake.url, "start", *flags(pem), *extra)
    assert r.returncode == 2 and r.stderr.startswith(f"portal.py: {field}: ") and r.stderr.count("\n") == 1


def test_start_twice_says_it_exists(fake, pem):
    args = ["start", *flags(pem), "--profile", "K2Bench,k2bench"]
    assert run(fake.url, *args).returncode == 0
    r = run(fake.url, *args)
    assert r.returncode == 1
    assert "already exists: terminate it" in r.stderr and r.stderr.count("\n") == 1


def test_failed_experiment_is_terminated_when_asked(fake, pem):
    fake.statuses = ["provisioning", "failed"]
    assert run(fake.url, "start", *flags(pem), "--profile", "K2Bench,k2bench").returncode == 0
    r = run(fake.url, "wait", *flags(pem), "--interval", "0", "--terminate-on-failure")
    assert r.returncode == 1
    assert "is failed" in r.stderr
    assert fake.methods()[-1] == "terminateExperiment" and fake.experiments == {}


def test_wait_times_out(fake, pem):
    fake.statuses = ["provisioning"]
    assert run(fake.url, "start", *flags(pem), "--profile", "K2Bench,k2bench").returncode == 0
    r = run(fake.url, "wait", *flags(pem), "--interval", "0", "--timeout", "0")
    assert r.returncode == 1 and "not ready after 0m00s (still provisioning;" in r.stderr
    assert "K2Bench,k2b-emu" in fake.experiments  # not asked to terminate


def test_terminate_is_repeatable(fake, pem):
    r = run(fake.url, "terminate", *flags(pem))
    assert r.returncode == 0 and "does not exist" in r.stdout


def test_unreachable_portal_is_retried_then_one_line(pem):
    began = time.monotonic()
    # 3 s: on a loaded machine the process can wait half a second for a CPU before its first try ends
    r = run("http://127.0.0.1:9/usr/testbed", "wait", *flags(pem), "--retry-for", "3", "--terminate-on-failure")
    assert time.monotonic() - began < 20
    assert r.returncode == 1
    *retries, last = r.stderr.splitlines()
    assert retries and all("experimentStatus: cannot reach http://127.0.0.1:9/usr/testbed" in line and "; retry " in line
                           for line in retries)
    assert last.startswith("portal.py: experimentStatus: cannot reach http://127.0.0.1:9/usr/testbed")
    assert f"gave up after {len(retries) + 1} attempts" in last and "K2Bench,k2b-emu was left as it is" in last


def test_an_unreachable_portal_during_destroy_says_the_experiment_may_still_run(pem):
    r = run("http://127.0.0.1:9/usr/testbed", "terminate", *flags(pem), "--retry-for", "0")
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("portal.py: terminateExperiment: cannot reach http://127.0.0.1:9/usr/testbed")
    assert r.stderr.endswith("K2Bench,k2b-emu may still be running: make emulab-down again once the portal answers\n")


# ---- TLS with a client certificate, as the real portal wants ------------------------------


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 and a user PEM (cert + encrypted key in one file)."""
    d = tmp_path_factory.mktemp("certs")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    openssl("req", "-x509", *ec, "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=fake Emulab CA", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("req", *ec, "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=d)
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "san.ext", cwd=d)
    openssl("req", *ec, "-keyout", "user.key", "-passout", "pass:sesame", "-out", "user.csr",
            "-subj", "/CN=alice", cwd=d)
    openssl("x509", "-req", "-in", "user.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "user.crt", "-days", "2", cwd=d)
    (d / "emulab.pem").write_text((d / "user.key").read_text() + (d / "user.crt").read_text())
    return d


@pytest.fixture
def tls_fake(certs):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs / "server.pem", certs / "server.key")
    ctx.load_verify_locations(certs / "ca.pem")
    ctx.verify_mode = ssl.CERT_REQUIRED  # the portal knows users by their certificate
    fake = FakePortal()
    server = serve(fake, ctx)
    fake.url = f"https://127.0.0.1:{server.server_address[1]}/usr/testbed"
    yield fake
    server.shutdown()
    server.server_close()


def test_tls_with_the_users_certificate(tls_fake, certs):
    args = ["--project", "K2Bench", "--name", "k2b-emu", "--pem", str(certs / "emulab.pem"),
            "--ca-cert", str(certs / "ca.pem")]
    password = {"K2BENCH_EMULAB_PEM_PASSWORD": "sesame"}
    r = run(tls_fake.url, "start", *args, "--profile", "K2Bench,k2bench", env=password)
    assert r.returncode == 0, r.stderr
    r = run(tls_fake.url, "terminate", *args, env=password)
    assert r.returncode == 0, r.stderr
    assert tls_fake.methods() == ["startExperiment", "terminateExperiment"]


def test_encrypted_pem_without_password_names_the_fix(tls_fake, certs):
    r = run(tls_fake.url, "terminate", "--project", "K2Bench", "--name", "k2b-emu",
            "--pem", str(certs / "emulab.pem"))
    assert r.returncode == 2
    assert r.stderr == ("portal.py: --pem: its private key is encrypted: set K2BENCH_EMULAB_PEM_PASSWORD "
                        "to the passphrase you gave the portal\n")
    assert tls_fake.calls == []


def test_a_certificate_the_portal_refuses_is_not_retried(tls_fake, certs, tmp_path):
    # A user certificate from another CA: the portal's TLS alert is a definitive answer.
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "other.key", "-out", "other.crt", "-days", "2", "-subj", "/CN=mallory", cwd=tmp_path)
    other = tmp_path / "other.pem"
    other.write_text((tmp_path / "other.key").read_text() + (tmp_path / "other.crt").read_text())
    # Under TLS 1.3 the client may see the connection end before the alert arrives: that
    # is retried; the alert itself ends the retrying well within the budget.
    began = time.monotonic()
    r = run(tls_fake.url, "terminate", "--project", "K2Bench", "--name", "k2b-emu", "--pem", str(other),
            "--ca-cert", str(certs / "ca.pem"), "--retry-delay", "0.1", "--retry-for", "40")
    assert time.monotonic() - began < 30
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1].startswith("portal.py: terminateExperiment: https://127.0.0.1:")
    assert "refused the TLS handshake (TLSV1_ALERT_UNKNOWN_CA)" in r.stderr.splitlines()[-1]


def test_a_pem_that_is_not_a_certificate_is_refused(tls_fake, pem):
    r = run(tls_fake.url, "terminate", *flags(pem))
    assert r.returncode == 2 and r.stderr.startswith("portal.py: --pem: ") and "not a usable certificate" in r.stderr


# ---- profile.py ----------------------------------------------------------------------------
# geni-lib on PyPI (0.9.9.4) is Python 2 only, so profile.py runs here against a stand-in
# with the same names and signatures (geni.portal.Context, ParameterType, ParameterError;
# geni.rspec.pg.IPv4Address; Request.LAN/RawPC, Node.addInterface, Interface.addAddress,
# LAN.addInterface) that records what the profile asks for.


def fake_geni(bindings):
    requests = []

    class ParameterError(Exception):
        def __init__(self, message, params):
            super().__init__(message)
            self.params = params

    class Interface:
        def __init__(self, node, name):
            self.client_id = f"{node.client_id}:{name}"
            self.addresses = []

        def addAddress(self, address):
            self.addresses.append(address)

    class Execute:
        def __init__(self, shell, command):
            self.shell, self.command = shell, command

    class RawPC:
        def __init__(self, name):
            self.client_id, self.hardware_type, self.disk_image, self.interfaces = name, None, None, []
            self.services = []

        def addService(self, service):
            self.services.append(service)

        def addInterface(self, name=None, address=None):
            iface = Interface(self, name)
            self.interfaces.append(iface)
            return iface

    class LAN:
        def __init__(self, name=None):
            self.client_id, self.interfaces, self.best_effort = name, [], False
            self.bandwidth, self.latency = -1, 0  # geni-lib's "unset": no shaping

        def addInterface(self, iface):
            self.interfaces.append(iface)

    class Request:
        def __init__(self):
            self.nodes, self.lans, self.printed = [], [], False

        def RawPC(self, name):
            self.nodes.append(RawPC(name))
            return self.nodes[-1]

        def LAN(self, name=None):
            self.lans.append(LAN(name))
            return self.lans[-1]

    class Context:
        def __init__(self):
            self.params, self.errors = {}, []

        def defineParameter(self, name, description, typ, default, *args, **kw):
            self.params[name] = typ(bindings.get(name, default)) if typ in (int, str) else bindings.get(name, default)

        def bindParameters(self):
            return types.SimpleNamespace(**self.params)

        def reportError(self, error, immediate=False):
            self.errors.append(error)

        def verifyParameters(self):
            if self.errors:
                raise SystemExit(f"parameter errors: {[str(e) for e in self.errors]}")

        def makeRequestRSpec(self):
            requests.append(Request())
            return requests[-1]

        def printRequestRSpec(self, request=None):
            request.printed = True

    portal_mod = types.ModuleType("geni.portal")
    portal_mod.Context = Context
    portal_mod.ParameterError = ParameterError
    portal_mod.ParameterType = types.SimpleNamespace(STRING=str, INTEGER=int, NODETYPE="nodetype")
    pg = types.ModuleType("geni.rspec.pg")
    pg.IPv4Address = lambda address, netmask: (address, netmask)
    pg.Execute = Execute
    geni = types.ModuleType("geni")
    rspec = types.ModuleType("geni.rspec")
    geni.portal, geni.rspec, rspec.pg = portal_mod, rspec, pg
    return {"geni": geni, "geni.portal": portal_mod, "geni.rspec": rspec, "geni.rspec.pg": pg}, requests


def run_profile(monkeypatch, bindings):
    modules, requests = fake_geni(bindings)
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    source = PROFILE.read_text()
    exec(compile(source, str(PROFILE), "exec"), {"__name__": "__main__"})
    assert len(requests) == 1 and requests[0].printed
    return requests[0]


def test_profile_defaults_are_the_default_cluster(monkeypatch):
    # Two servers per datacenter, as every shipped experiment and Terraform's default.
    request = run_profile(monkeypatch, {})
    names = [n.client_id for n in request.nodes]
    assert len(names) == 6 * (2 + 8)
    assert names[:11] == [f"va-server-{i}" for i in range(2)] + [f"va-client-{i}" for i in range(8)] + ["ca-server-0"]
    assert {n.hardware_type for n in request.nodes} == {"d430"}
    assert {n.disk_image for n in request.nodes} == {"urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"}


def test_profile_puts_every_node_on_one_unshaped_lan(monkeypatch):
    request = run_profile(monkeypatch, {"datacenters": "VA,LDN", "servers_per_dc": "2", "clients_per_dc": "1",
                                        "hardware_type": "d710"})
    assert len(request.lans) == 1
    lan = request.lans[0]
    assert (lan.bandwidth, lan.latency) == (-1, 0)  # no shaping: netem on the nodes does latency
    by_name = {n.client_id: n for n in request.nodes}
    assert sorted(by_name) == sorted(["va-server-0", "va-server-1", "va-client-0",
                                      "ldn-server-0", "ldn-server-1", "ldn-client-0"])
    assert [i.client_id for i in lan.interfaces] == [n.interfaces[0].client_id for n in request.nodes]
    addresses = {n.client_id: n.interfaces[0].addresses[0][0] for n in request.nodes}
    # The fixture manifest uses the same plan, so it is what this profile would get.
    manifest = ET.fromstring(MANIFEST)
    ns = "{http://www.geni.net/resources/rspec/3}"
    assert {n.get("client_id"): n.find(f"{ns}interface/{ns}ip").get("address")
            for n in manifest.iter(f"{ns}node")} == addresses
    assert {n.hardware_type for n in request.nodes} == {"d710"}


def test_profile_rejects_duplicate_datacenters(monkeypatch):
    with pytest.raises(SystemExit, match="datacenters: give distinct names"):
        run_profile(monkeypatch, {"datacenters": "VA,va"})


def test_profile_publishes_every_nodes_host_keys(monkeypatch, tmp_path):
    """Each node runs the boot script; run here on a scratch tree, it writes the file portal.py reads."""
    request = run_profile(monkeypatch, {"datacenters": "VA", "servers_per_dc": "1", "clients_per_dc": "1"})
    scripts = {n.client_id: [(svc.shell, svc.command) for svc in n.services] for n in request.nodes}
    assert set(scripts) == {"va-server-0", "va-client-0"}
    for services in scripts.values():
        assert len(services) == 1 and services[0][0] == "sh"
    command = services[0][1]
    assert "\n" not in command  # the rspec carries it in an XML attribute

    root = tmp_path / "node"
    (root / "var/emulab/boot").mkdir(parents=True)
    (root / "var/emulab/boot/nickname").write_text("va-server-0.k2b-emu.K2Bench\n")
    (root / "etc/ssh").mkdir(parents=True)
    for kind in ("ed25519", "ecdsa"):
        subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(root / f"etc/ssh/ssh_host_{kind}_key")],
                       check=True, timeout=60)
    (root / "proj/K2Bench/exp/k2b-emu").mkdir(parents=True)
    r = subprocess.run(["sh", "-c", command], env={**os.environ, "K2B_ROOT": str(root)}, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    published = (root / "proj/K2Bench/exp/k2b-emu/k2bench-hostkeys/va-server-0.keys").read_text()
    keys = portal.parse_key_lines(published, {"va-server-0"}, "test")
    expected = sorted(tuple((root / f"etc/ssh/ssh_host_{kind}_key.pub").read_text().split()[:2])
                      for kind in ("ed25519", "ecdsa"))
    assert sorted(keys["va-server-0"]) == expected


# ---- transient portal errors ------------------------------------------------------------


def started(fake, pem):
    r = run(fake.url, "start", *flags(pem), "--profile", "K2Bench,k2bench", "--duration", "4")
    assert r.returncode == 0, r.stderr
    return r


def test_transient_errors_during_wait_are_retried_and_never_terminate(fake, pem):
    started(fake, pem)
    fake.calls.clear()
    fake.http = ["503", "drop"]                  # HTTP 5xx, a connection closed unanswered
    fake.codes["experimentStatus"] = [7, 8, 5]   # busy/refused, timed out, server error
    fake.faults["experimentStatus"] = 1          # an exception on the portal's side
    r = run(fake.url, "wait", *flags(pem), "--interval", "0", "--terminate-on-failure", "--retry-for", "60")
    assert r.returncode == 0, r.stderr
    retries = r.stderr.splitlines()
    assert len(retries) == 6 and all(line.startswith("portal.py: experimentStatus: ") for line in retries)
    for what in ("HTTP 503", "cannot reach", "code 7 (Emulab is busy", "code 8", "code 5", "database connection lost"):
        assert sum(what in line for line in retries) == 1, (what, retries)
    assert all("; retry " in line for line in retries)
    assert "terminateExperiment" not in fake.methods()
    assert "K2Bench,k2b-emu" in fake.experiments
    assert r.stdout.splitlines()[-1].startswith("emulab: K2Bench,k2b-emu: ready")


def test_persistent_transient_error_is_bounded_and_leaves_the_experiment(fake, pem):
    started(fake, pem)
    fake.always["experimentStatus"] = 7
    began = time.monotonic()
    r = run(fake.url, "wait", *flags(pem), "--interval", "0", "--terminate-on-failure",
            "--retry-for", "1", "--retry-delay", "0.05")
    assert time.monotonic() - began < 30
    assert r.returncode == 1
    *retries, last = r.stderr.splitlines()
    attempts = fake.methods().count("experimentStatus")
    assert len(retries) == attempts - 1 >= 3  # backoff 0.05, 0.1, 0.2, 0.4 ... within 1 s
    assert last == (f"portal.py: experimentStatus: the portal answered code 7 (Please try again later); gave up "
                    f"after {attempts} attempts in {last.split(' in ')[1].split(' ')[0]} (--retry-for); "
                    "K2Bench,k2b-emu was left as it is, not terminated: make emulab-up again once the portal "
                    "answers waits for the same experiment")
    assert "terminateExperiment" not in fake.methods() and "K2Bench,k2b-emu" in fake.experiments


def test_a_definitive_portal_error_is_not_retried(fake, pem):
    started(fake, pem)
    fake.calls.clear()
    fake.codes["experimentStatus"] = [3]  # forbidden
    r = run(fake.url, "wait", *flags(pem), "--terminate-on-failure")
    assert r.returncode == 1
    assert r.stderr.startswith("portal.py: experimentStatus failed (code 3)") and r.stderr.count("\n") == 1
    assert fake.methods() == ["experimentStatus"]  # one try, and no terminate: it did not fail


def test_a_wrong_path_is_not_retried(fake, pem):
    r = run(fake.url.replace("/usr/testbed", "/nope"), "terminate", *flags(pem))
    assert r.returncode == 1 and "answered HTTP 404" in r.stderr and r.stderr.count("\n") == 1


def test_a_start_whose_answer_was_lost_is_not_started_twice(fake, pem):
    fake.http = ["lost"]  # the portal starts it, the answer never arrives
    r = run(fake.url, "start", *flags(pem), "--profile", "K2Bench,k2bench")
    assert r.returncode == 0, r.stderr
    assert "started by the first attempt" in r.stdout
    assert fake.methods() == ["startExperiment", "startExperiment"] and list(fake.experiments) == ["K2Bench,k2b-emu"]


def test_failed_experiment_is_a_definitive_failure(fake, pem):
    fake.statuses = ["provisioning", "failed"]
    started(fake, pem)
    fake.codes["experimentStatus"] = [7]  # a busy portal on the way does not count
    r = run(fake.url, "wait", *flags(pem), "--interval", "0", "--terminate-on-failure")
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (
        "portal.py: experiment K2Bench,k2b-emu is failed on the portal (see its page there): terminated it; "
        "make emulab-down, then make emulab-up starts a new one")
    assert fake.experiments == {}


# ---- extend and lifetime ----------------------------------------------------------------


def expiry(fake):
    return fake.experiments["K2Bench,k2b-emu"]["expires"]


def test_extend_asks_the_portal_for_more_hours(fake, pem):
    started(fake, pem)
    before = expiry(fake)
    fake.codes["extendExperiment"] = [5]  # a server error first: retried
    r = run(fake.url, "extend", *flags(pem), "--hours", "8")
    assert r.returncode == 0, r.stderr
    extends = [params for method, _, params in fake.calls if method == "extendExperiment"]
    assert extends == [{"experiment": "K2Bench,k2b-emu", "wanted": 8,
                        "reason": "k2bench: make emulab-extend HOURS=8"}] * 2
    assert expiry(fake) - before == datetime.timedelta(hours=8)
    assert f"now expires {(before + datetime.timedelta(hours=8)).strftime('%Y-%m-%dT%H:%M:%SZ')}" in r.stdout


def test_extend_reports_what_the_portal_granted(fake, pem):
    started(fake, pem)
    fake.granted = 2
    r = run(fake.url, "extend", *flags(pem), "--hours", "48")
    assert r.returncode == 0, r.stderr
    assert "the portal granted 2.0 of 48 h: the rest awaits an administrator's approval" in r.stdout


def test_a_refused_extension_is_not_retried(fake, pem):
    started(fake, pem)
    fake.codes["extendExperiment"] = [7]
    r = run(fake.url, "extend", *flags(pem), "--hours", "8")
    assert r.returncode == 1 and r.stderr.startswith("portal.py: extendExperiment failed (code 7)")
    assert fake.methods().count("extendExperiment") == 1


@pytest.mark.parametrize("hours", ["0", "x", ""])
def test_extend_needs_whole_hours(fake, pem, hours):
    r = run(fake.url, "extend", *flags(pem), "--hours", hours)
    assert r.returncode == 2 and r.stderr.startswith("portal.py: --hours: ") and r.stderr.count("\n") == 1
    assert fake.calls == []


def test_lifetime_extends_to_start_plus_duration_and_never_shortens(fake, pem):
    started(fake, pem)  # 4 h
    start = expiry(fake) - datetime.timedelta(hours=4)
    until = (start + datetime.timedelta(hours=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    r = run(fake.url, "lifetime", *flags(pem), "--hours", "10", "--until", until)
    assert r.returncode == 0, r.stderr
    (extend_call,) = [p for m, _, p in fake.calls if m == "extendExperiment"]
    assert extend_call["wanted"] == 6 and extend_call["reason"] == "k2bench: duration_hours raised to 10"
    assert expiry(fake) == start + datetime.timedelta(hours=10)

    fake.calls.clear()
    until = (start + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    r = run(fake.url, "lifetime", *flags(pem), "--hours", "2", "--until", until)
    assert r.returncode == 0, r.stderr
    assert "the portal cannot shorten an experiment" in r.stdout
    assert "extendExperiment" not in fake.methods() and expiry(fake) == start + datetime.timedelta(hours=10)


# ---- the SSH user comes from the certificate ---------------------------------------------


def emulab_certificate(directory, login, *, urn=True, email=True):
    """A throwaway self-signed certificate + key shaped like Emulab's (CN = a UUID)."""
    subject = "/C=US/ST=Utah/L=Salt Lake City/O=Utah Network Testbed/OU=sslxmlrpc/CN=0b2f1c1e-7d1a-11ef-9f0c-001122334455"
    if email:
        subject += f"/emailAddress={login}@emulab.net"
    extra = ["-addext", f"subjectAltName=URI:urn:publicid:IDN+emulab.net+user+{login},"
                        "URI:urn:uuid:0b2f1c1e-7d1a-11ef-9f0c-001122334455"] if urn else []
    path = directory / f"{login}-{urn}-{email}.pem"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj", subject, *extra, cwd=directory)
    # The portal's PEM: key first, then the certificate.
    path.write_text((directory / "key.pem").read_text() + (directory / "cert.pem").read_text())
    return path


@pytest.mark.parametrize("urn, email", [(True, True), (True, False), (False, True)])
def test_ssh_user_from_the_certificate(tmp_path, urn, email):
    assert portal.user_from_certificate(emulab_certificate(tmp_path, "carol", urn=urn, email=email)) == "carol"


@pytest.mark.parametrize("urn, email", [(True, False), (False, True)])
def test_ssh_user_from_the_certificate_with_the_openssl_tool(tmp_path, monkeypatch, urn, email):
    # Without CPython's private certificate decoder, the openssl command line tool reads it.
    monkeypatch.delattr(portal.ssl._ssl, "_test_decode_cert")
    assert portal.user_from_certificate(emulab_certificate(tmp_path, "dave", urn=urn, email=email)) == "dave"


def test_a_certificate_without_a_login_names_none(tmp_path):
    assert portal.user_from_certificate(emulab_certificate(tmp_path, "carol", urn=False, email=False)) is None
    plain = tmp_path / "plain.pem"
    plain.write_text("not a certificate\n")
    assert portal.user_from_certificate(plain) is None


def test_inventory_takes_the_user_from_the_certificate_not_the_manifest(fake, tmp_path, fake_ssh):
    cert = emulab_certificate(tmp_path, "carol")  # the manifest's logins are all alice's
    started(fake, cert)
    out = tmp_path / "inventory.json"
    r = run(fake.url, "inventory", *flags(cert), "--out", str(out), env=fake_ssh.env)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["ssh"]["user"] == "carol"
    assert "warning: carol is not among the manifest's logins (alice)" in r.stderr
    assert "carol@users.emulab.net" in fake_ssh.log.read_text().splitlines()


def test_inventory_without_any_user_names_the_variable(fake, tmp_path, fake_ssh):
    cert = emulab_certificate(tmp_path, "carol", urn=False, email=False)
    started(fake, cert)
    out = tmp_path / "inventory.json"
    r = run(fake.url, "inventory", *flags(cert), "--out", str(out), env=fake_ssh.env)
    assert r.returncode == 2
    assert r.stderr == (f"portal.py: --ssh-user: the certificate {cert} names no Emulab user: set the Terraform "
                        "variable ssh_user (TF_VAR_ssh_user) to your Emulab login\n")
    assert not out.exists() and "experimentManifests" not in fake.methods()


# ---- host keys ----------------------------------------------------------------------------


def test_inventory_writes_known_hosts_from_the_published_keys(fake, pem, tmp_path, fake_ssh):
    started(fake, pem)
    out = tmp_path / "inventory.json"
    r = run(fake.url, "inventory", *flags(pem), "--ssh-user", "alice", "--ssh-private-key", "~/.ssh/emulab",
            "--out", str(out), env=fake_ssh.env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["ssh"]["known_hosts"] == "known_hosts"
    lines = (tmp_path / "known_hosts").read_text().splitlines()
    expected = sorted(f"{NODES[n]},{n}.k2b-emu.K2Bench.emulab.net ssh-ed25519 {KEYS[n]}" for n in NODES)
    assert sorted(lines) == expected
    argv = fake_ssh.log.read_text().split("---\n")[0].splitlines()
    assert argv[argv.index("-i") + 1] == os.path.expanduser("~/.ssh/emulab")
    assert "StrictHostKeyChecking=yes" in argv and "BatchMode=yes" in argv
    assert argv[-2:] == ["alice@users.emulab.net", "cat /proj/K2Bench/exp/k2b-emu/k2bench-hostkeys/*.keys 2>/dev/null; true"]
    # Every host of the inventory has its key in the file the inventory names.
    inv = k2inventory.load(out)
    assert {h.public_ip for h in inv.hosts()} == {line.split(",")[0] for line in lines}


def test_inventory_waits_for_every_nodes_key_and_gives_up_naming_them(fake, pem, tmp_path, fake_ssh):
    started(fake, pem)
    fake_ssh.published.write_text(f"va-server-0 ssh-ed25519 {KEYS['va-server-0']}\n"
                                  f"someone-else ssh-ed25519 {KEYS['va-server-1']}\n")
    out = tmp_path / "inventory.json"
    r = run(fake.url, "inventory", *flags(pem), "--ssh-user", "alice", "--out", str(out),
            "--interval", "0", "--host-keys-timeout", "0", env=fake_ssh.env)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1].startswith(
        "portal.py: host keys: no key from users.emulab.net:/proj/K2Bench/exp/k2b-emu/k2bench-hostkeys for 5 of 6 "
        "nodes (ldn-client-0, ldn-server-0, ldn-server-1, va-client-0, ...)")
    assert not out.exists() and not (tmp_path / "known_hosts").exists()
    assert "K2Bench,k2b-emu" in fake.experiments


def test_a_malformed_published_key_is_refused(fake, pem, tmp_path, fake_ssh):
    started(fake, pem)
    fake_ssh.published.write_text("".join(f"{n} ssh-ed25519 {KEYS[n]}\n" for n in NODES) +
                                  f"va-client-0 ssh-ed25519 {ssh_key('ssh-rsa')}\n")
    r = run(fake.url, "inventory", *flags(pem), "--ssh-user", "alice", "--out", str(tmp_path / "inv.json"),
            env=fake_ssh.env)
    assert r.returncode == 1 and "the line for va-client-0 is not '<node> <key type> <key>'" in r.stderr


def test_keyscan_is_opt_in_and_says_it_is_unverified(fake, pem, tmp_path):
    started(fake, pem)
    script = tmp_path / "fake-keyscan"
    script.write_text("#!/bin/sh\n" + "".join(f"echo '{ip} ssh-ed25519 {KEYS[n]}'\n" for n, ip in NODES.items()))
    script.chmod(0o755)
    out = tmp_path / "inventory.json"
    r = run(fake.url, "inventory", *flags(pem), "--ssh-user", "alice", "--out", str(out), "--host-keys", "keyscan",
            env={"K2BENCH_EMULAB_KEYSCAN": str(script), "K2BENCH_EMULAB_SSH": "/nonexistent/ssh"})
    assert r.returncode == 0, r.stderr
    assert "warning: host_keys = keyscan: the nodes' keys are taken from whoever answers" in r.stderr
    assert len((tmp_path / "known_hosts").read_text().splitlines()) == len(NODES)
