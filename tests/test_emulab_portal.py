"""terraform/emulab/portal.py against a fake Emulab portal on 127.0.0.1 (plain HTTP and TLS
with a client certificate), and terraform/emulab/profile.py against a stand-in geni-lib."""
import importlib.util
import json
import os
import pathlib
import ssl
import subprocess
import sys
import threading
import types
import xml.etree.ElementTree as ET
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

import pytest

from k2bench import inventory as k2inventory

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
    """The four portal.* calls, answering {code, value, output} as the real portal does."""

    def __init__(self, statuses=("provisioning", "booting", "ready")):
        self.statuses = list(statuses)
        self.experiments = {}
        self.calls = []

    def _record(self, method, version, params):
        self.calls.append((method, version, dict(params)))

    def startExperiment(self, version, params):
        self._record("startExperiment", version, params)
        key = f"{params['proj']},{params['name']}"
        if key in self.experiments:
            return {"code": 17, "value": 0, "output": "Experiment already exists"}
        self.experiments[key] = 0
        return {"code": 0, "value": "", "output": ""}

    def experimentStatus(self, version, params):
        self._record("experimentStatus", version, params)
        if params["experiment"] not in self.experiments:
            return {"code": 12, "value": 0, "output": "No such experiment"}
        n = self.experiments[params["experiment"]]
        self.experiments[params["experiment"]] = n + 1
        status = self.statuses[min(n, len(self.statuses) - 1)]
        return {"code": 0, "value": json.dumps({"status": status, "expires": "2026-11-23T04:00:00Z"}),
                "output": ""}

    def experimentManifests(self, version, params):
        self._record("experimentManifests", version, params)
        if params["experiment"] not in self.experiments:
            return {"code": 12, "value": 0, "output": "No such experiment"}
        return {"code": 0, "value": json.dumps({AGGREGATE: MANIFEST}), "output": ""}

    def terminateExperiment(self, version, params):
        self._record("terminateExperiment", version, params)
        if self.experiments.pop(params["experiment"], None) is None:
            return {"code": 12, "value": 0, "output": "No such experiment"}
        return {"code": 0, "value": "", "output": ""}

    def methods(self):
        return [c[0] for c in self.calls]


class Handler(SimpleXMLRPCRequestHandler):
    rpc_paths = ("/usr/testbed",)  # the portal's path; anything else is a 404


def serve(fake, tls_context=None):
    server = SimpleXMLRPCServer(("127.0.0.1", 0), Handler, allow_none=True, logRequests=False)
    if tls_context is not None:
        server.socket = tls_context.wrap_socket(server.socket, server_side=True)
    for name in ("startExperiment", "experimentStatus", "experimentManifests", "terminateExperiment"):
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
    return ["--project", "K2Bench", "--name", name, "--pem", str(pem)]


def test_start_wait_inventory_terminate(fake, pem, tmp_path):
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

    r = run(fake.url, "inventory", *flags(pem), "--datacenters", "VA,LDN",
            "--ssh-private-key", "~/.ssh/id_ed25519", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc == EXPECTED
    assert k2inventory.parse(doc).provider == "emulab"

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
                                          private_key="~/.ssh/id_ed25519")
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
        portal.inventory_from_manifests([MANIFEST.replace(*change)], experiment_id="x",
                                        datacenters=["VA", "LDN"])


def test_manifest_missing_a_datacenter_is_an_error():
    with pytest.raises(portal.PortalError, match="no nodes for datacenter.*SG"):
        portal.inventory_from_manifests([MANIFEST], experiment_id="x", datacenters=["VA", "LDN", "SG"])
    with pytest.raises(portal.PortalError, match="belongs to no datacenter"):
        portal.inventory_from_manifests([MANIFEST], experiment_id="x", datacenters=["VA"])


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
    assert r.returncode == 1 and "not ready after 0m00s (still provisioning)" in r.stderr
    assert "K2Bench,k2b-emu" in fake.experiments  # not asked to terminate


def test_terminate_is_repeatable(fake, pem):
    r = run(fake.url, "terminate", *flags(pem))
    assert r.returncode == 0 and "does not exist" in r.stdout


def test_unreachable_portal_is_one_line(pem):
    r = run("http://127.0.0.1:9/usr/testbed", "wait", *flags(pem))
    assert r.returncode == 1
    assert r.stderr.startswith("portal.py: experimentStatus: cannot reach http://127.0.0.1:9/usr/testbed")
    assert r.stderr.count("\n") == 1


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

    class RawPC:
        def __init__(self, name):
            self.client_id, self.hardware_type, self.disk_image, self.interfaces = name, None, None, []

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


def test_profile_defaults_are_the_papers_cluster(monkeypatch):
    request = run_profile(monkeypatch, {})
    names = [n.client_id for n in request.nodes]
    assert len(names) == 6 * (4 + 8)
    assert names[:13] == [f"va-server-{i}" for i in range(4)] + [f"va-client-{i}" for i in range(8)] + ["ca-server-0"]
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
