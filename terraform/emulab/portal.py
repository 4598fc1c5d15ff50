#!/usr/bin/env python3
"""Start, wait for, extend, describe and terminate an Emulab experiment through the portal API.

Terraform's local-exec runs this file (terraform/emulab/main.tf), so it needs nothing but
python3's standard library. It makes the XML-RPC calls the portal's own command-line tools
make: ``portal.startExperiment``, ``portal.experimentStatus``, ``portal.experimentManifests``,
``portal.extendExperiment`` and ``portal.terminateExperiment``, each called as
``method(API_VERSION, {params})`` and answering ``{"code", "value", "output"}``. It
authenticates with the user's Emulab SSL certificate (the PEM file the portal hands out) as
a TLS client certificate.

    portal.py start     --project P --name N --pem ~/.ssl/emulab.pem --profile P,k2bench \\
                        [--duration 16] [--bindings '{"servers_per_dc": "2"}']
    portal.py wait      --project P --name N --pem ... [--timeout 3600] [--terminate-on-failure]
    portal.py inventory --project P --name N --pem ... [--datacenters VA,CA] [--out inventory.json]
                        [--ssh-user U] [--host-keys published|keyscan] [--known-hosts FILE]
    portal.py extend    --project P --name N --pem ... --hours 8
    portal.py lifetime  --project P --name N --pem ... --until 2026-11-25T18:00:00Z
    portal.py terminate --project P --name N --pem ...

Transient failures (network errors, timeouts, HTTP 5xx, XML-RPC faults, and the portal's
"server error", "refused: try again later" and "timed out" codes) are retried with
exponential backoff for at most --retry-for seconds, each retry announced on stderr. Only a
definitive answer ends a command early. ``wait --terminate-on-failure`` terminates the
experiment only when it definitively failed (the portal says failed, or it was not ready
within --timeout), never because the portal could not be reached.

``inventory`` turns the experiment's manifest RSpec into the k2bench inventory
(k2bench/deploy/inventory.py): one host per node named ``<dc>-server-<i>`` or ``<dc>-client-<i>``
(terraform/emulab/profile.py names them so), public_ip = the node's control-network
address, private_ip = its address on the experiment LAN. The SSH user is --ssh-user, else
the login named in the certificate (--pem); never a login taken from the manifest, which
lists every project member. Next to the inventory it writes ``known_hosts`` with every
node's host key: ``published`` reads the keys each node wrote at boot (profile.py) into the
experiment's directory on the testbed's file server, over SSH to the ops host verified by
your own known_hosts; ``keyscan`` (explicit opt-in) trusts whatever key answers first.

K2BENCH_EMULAB_URL overrides the endpoint (the tests point it at a plain-HTTP fake);
K2BENCH_EMULAB_PEM_PASSWORD unlocks a PEM whose key is encrypted; K2BENCH_EMULAB_SSH and
K2BENCH_EMULAB_KEYSCAN name the ssh and ssh-keyscan programs (default: from PATH). Bad input
exits 2 with one line naming the flag; a portal error exits 1 with one line.
"""
from __future__ import annotations

import argparse
import base64
import binascii
import datetime as dt
import http.client
import json
import math
import os
import random
import re
import shlex
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET
import xmlrpc.client
from pathlib import Path

DEFAULT_URL = "https://boss.emulab.net:3069/usr/testbed"
DEFAULT_OPS = "users.emulab.net"
API_VERSION = 0.1  # the portal checks the client's API version; its tools send 0.1

# Response codes of the portal's XML-RPC server (its emulabclient module).
SUCCESS, SERVERERROR, REFUSED, TIMEDOUT, SEARCHFAILED, ALREADYEXISTS = 0, 5, 7, 8, 12, 17
# "Server error", "refused: the testbed is down, try again later", "timed out".
TRANSIENT_CODES = frozenset({SERVERERROR, REFUSED, TIMEDOUT})

CALL_TIMEOUT = 120.0     # seconds one XML-RPC call may take
MAX_RETRY_DELAY = 60.0   # backoff cap, seconds

RSPEC = "{http://www.geni.net/resources/rspec/3}"
NODE_NAME = re.compile(r"^([a-z][a-z0-9]*)-(server|client)-(\d+)$")
PROJECT = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9]{0,47}$")
EXPERIMENT = re.compile(r"^[A-Za-z][-A-Za-z0-9]{0,15}$")
PROFILE = re.compile(r"^([-A-Za-z0-9]+,[-A-Za-z0-9_]+|[0-9a-fA-F-]{36})$")
LOGIN = re.compile(r"^[a-z][-a-z0-9_]{0,31}$")
HOST = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9.]{0,252}$")
USER_URN = re.compile(r"^urn:publicid:IDN\+[^+]+\+user\+([^+]+)$")
KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")
# Where profile.py's boot script puts each node's host public keys (one file per node).
HOSTKEY_DIR = "/proj/{project}/exp/{name}/k2bench-hostkeys"


class UsageError(Exception):
    """Bad input: one line naming the flag and the fix."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")


class PortalError(Exception):
    """The portal refused or failed a call, or the experiment cannot be used."""


class PortalUnavailable(PortalError):
    """Transient failures outlasted the retry budget: the experiment's state is unknown."""


class ExperimentFailed(PortalError):
    """The experiment definitively failed: the portal says so, or it never became ready."""


def say(message: str) -> None:
    """Progress on stderr (stdout may carry an inventory)."""
    print(f"portal.py: {message}", file=sys.stderr, flush=True)


# ---- the certificate -> the SSH user ---------------------------------------------------


def user_from_certificate(pem: Path) -> str | None:
    """The Emulab login the certificate names, or None.

    Emulab's user certificates carry the login as the GENI user URN in subjectAltName
    (``urn:publicid:IDN+<authority>+user+<login>``) and as the local part of the subject's
    emailAddress (``<login>@<testbed domain>``); the CN is the user's UUID.
    """
    try:
        text = pem.read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", text, flags=re.S)
    if not m:
        return None
    subject, alt_names = _decode_certificate(m.group(0) + "\n")
    for kind, value in alt_names:
        u = USER_URN.match(value) if kind == "URI" else None
        if u and LOGIN.match(u.group(1)):
            return u.group(1)
    for name, value in subject:
        if name == "emailAddress" and "@" in value:
            local = value.split("@", 1)[0]
            if LOGIN.match(local):
                return local
    return None


def _decode_certificate(pem_text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(subject, subjectAltName) of one PEM certificate, as (name, value) pairs."""
    with tempfile.TemporaryDirectory(prefix="k2b-cert-") as d:
        path = os.path.join(d, "cert.pem")
        with open(path, "w") as f:
            f.write(pem_text)
        decode = getattr(getattr(ssl, "_ssl", None), "_test_decode_cert", None)
        if decode is not None:
            try:
                cert = decode(path)
            except (ssl.SSLError, ValueError):
                return [], []
            subject = [pair for rdn in cert.get("subject", ()) for pair in rdn]
            return subject, list(cert.get("subjectAltName", ()))
        # No private decoder in this Python: ask the openssl command line tool.
        try:
            r = subprocess.run(["openssl", "x509", "-in", path, "-noout", "-subject", "-nameopt", "RFC2253",
                                "-ext", "subjectAltName"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return [], []
        if r.returncode != 0:
            return [], []
        subject, alt = [], []
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("subject="):
                for part in re.split(r"(?<!\\),", line[len("subject="):]):
                    if "=" in part:
                        k, v = part.split("=", 1)
                        subject.append(({"EMAILADDRESS": "emailAddress", "1.2.840.113549.1.9.1": "emailAddress"}
                                        .get(k.strip().upper(), k.strip()), v.strip()))
            else:
                for part in line.split(","):
                    if ":" in part:
                        k, v = part.split(":", 1)
                        alt.append(({"URI": "URI", "email": "email"}.get(k.strip(), k.strip()), v.strip()))
        return subject, alt


# ---- the manifest -> inventory (pure) ------------------------------------------------


def manifest_nodes(manifests: list[str], datacenters: list[str] | None = None) -> list[dict]:
    """The nodes of ``manifests`` (manifest RSpec XML documents), checked against the naming."""
    names = {dc.lower(): dc for dc in (datacenters or [])}
    nodes = []
    for doc in manifests:
        try:
            root = ET.fromstring(doc)
        except ET.ParseError as e:
            raise PortalError(f"manifest is not XML: {e}") from None
        for node in root.iter(f"{RSPEC}node"):
            name = node.get("client_id", "")
            m = NODE_NAME.match(name)
            if not m:
                raise PortalError(f"manifest node {name!r} is not named <dc>-server-<i> or "
                                  "<dc>-client-<i>: start the experiment from terraform/emulab/profile.py")
            prefix, role, index = m.group(1), m.group(2), int(m.group(3))
            if datacenters and prefix not in names:
                raise PortalError(f"manifest node {name!r} belongs to no datacenter of "
                                  f"--datacenters {','.join(datacenters)}")
            dc = names.setdefault(prefix, prefix.upper())
            host = node.find(f"{RSPEC}host")
            control = host.get("ipv4") if host is not None else None
            if not control:
                raise PortalError(f"manifest node {name!r} has no control address (<host ipv4=...>)")
            lan = next((ip.get("address") for iface in node.findall(f"{RSPEC}interface")
                        for ip in iface.findall(f"{RSPEC}ip")
                        if ip.get("address") and ip.get("type", "ipv4") == "ipv4"), None)
            if not lan:
                raise PortalError(f"manifest node {name!r} has no experiment LAN address "
                                  "(<interface><ip address=...>): the profile puts every node on one LAN")
            logins = [login.get("username") for login in node.iter(f"{RSPEC}login") if login.get("username")]
            nodes.append({"name": name, "dc": dc, "role": role, "index": index, "public_ip": control,
                          "private_ip": lan, "hostname": host.get("name"), "logins": logins})
    return nodes


def inventory_from_manifests(manifests: list[str], *, experiment_id: str, ssh_user: str,
                             datacenters: list[str] | None = None, private_key: str | None = None,
                             known_hosts: str | None = None) -> dict:
    """The k2bench inventory of the nodes in ``manifests``.

    Datacenters keep the order of ``datacenters`` when given (a node whose prefix is not
    one of them is an error), else the order nodes first appear; hosts are servers then
    clients, each by index. ``ssh_user`` is required: the manifest lists the logins of
    every project member, so it cannot tell which one is yours.
    """
    if not ssh_user:
        raise UsageError("--ssh-user", "missing: give your Emulab user name (Terraform variable ssh_user)")
    found: dict[str, list[tuple[int, int, dict]]] = {dc: [] for dc in (datacenters or [])}
    for n in manifest_nodes(manifests, datacenters):
        found.setdefault(n["dc"], []).append((0 if n["role"] == "server" else 1, n["index"], {
            "name": n["name"], "role": n["role"], "public_ip": n["public_ip"], "private_ip": n["private_ip"],
            "ssh_port": 22}))
    empty = [dc for dc, hosts in found.items() if not hosts]
    if empty or not found:
        raise PortalError(f"the manifest has no nodes for datacenter(s) {', '.join(empty) or '(any)'}: "
                          "were the profile's parameters (bindings) the same datacenters?")
    ssh = {"user": ssh_user}
    if private_key:
        ssh["private_key"] = private_key
    if known_hosts:
        ssh["known_hosts"] = known_hosts
    return {
        "schema": "k2bench-inventory/1",
        "experiment_id": experiment_id,
        "provider": "emulab",
        "latency": "netem",              # tc on the nodes (netem role): the LAN itself is unshaped
        "topology_address": "private",   # servers talk over the experiment LAN
        "ssh": ssh,
        "datacenters": {dc: {"hosts": [h for _, _, h in sorted(hosts, key=lambda t: t[:2])]}
                        for dc, hosts in found.items()},
    }


# ---- host keys -----------------------------------------------------------------------


def parse_key_lines(text: str, nodes: set[str], source: str) -> dict[str, list[tuple[str, str]]]:
    """``<node> <key type> <base64>`` lines -> {node: [(type, base64)]}; other nodes' lines are skipped."""
    keys: dict[str, list[tuple[str, str]]] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] not in nodes:
            continue
        node = parts[0]
        if len(parts) < 3 or parts[1] not in KEY_TYPES or not _is_key(parts[1], parts[2]):
            raise PortalError(f"host keys from {source}: the line for {node} is not '<node> <key type> <key>': "
                              f"{line[:80]!r}")
        keys.setdefault(node, []).append((parts[1], parts[2]))
    return keys


def _is_key(kind: str, blob: str) -> bool:
    """A base64 SSH public key blob whose embedded type is ``kind``."""
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(raw) < 4:
        return False
    n = int.from_bytes(raw[:4], "big")
    return raw[4:4 + n] == kind.encode()


def fetch_published_keys(*, ssh_user: str, ops: str, project: str, name: str,
                         private_key: str | None) -> str:
    """The key files profile.py's boot script wrote, read over SSH from the ops host.

    The ops host is verified against your own known_hosts (StrictHostKeyChecking=yes):
    it is one long-lived testbed host, unlike the experiment's freshly imaged nodes.
    """
    directory = HOSTKEY_DIR.format(project=project, name=name)
    argv = shlex.split(os.environ.get("K2BENCH_EMULAB_SSH") or "ssh") + [
        "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=20"]
    if private_key:
        argv += ["-i", os.path.expanduser(private_key)]
    argv += [f"{ssh_user}@{ops}", f"cat {directory}/*.keys 2>/dev/null; true"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise PortalUnavailable(f"host keys: ssh to {ops} did not answer within 120 s") from None
    except OSError as e:
        raise PortalError(f"host keys: cannot run ssh: {e}") from None
    if r.returncode != 0:
        detail = " ".join(r.stderr.split())[:200] or f"exit {r.returncode}"
        if "Host key verification failed" in r.stderr or "No matching host key" in r.stderr:
            raise PortalError(f"host keys: {ops} is not in your known_hosts ({detail}): connect once with "
                              f"`ssh {ssh_user}@{ops}` and check its fingerprint against the testbed's documentation")
        raise PortalUnavailable(f"host keys: ssh {ssh_user}@{ops} failed: {detail}")
    return r.stdout


def keyscan(addresses: dict[str, str]) -> str:
    """``<node> <type> <key>`` lines from ssh-keyscan of each node's control address (trust on first use)."""
    argv = shlex.split(os.environ.get("K2BENCH_EMULAB_KEYSCAN") or "ssh-keyscan") + [
        "-T", "10", "-t", ",".join(("ed25519", "ecdsa", "rsa")), *sorted(set(addresses.values()))]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PortalUnavailable(f"host keys: ssh-keyscan failed: {e}") from None
    by_address: dict[str, list[str]] = {}
    for node, address in addresses.items():
        by_address.setdefault(address, []).append(node)
    lines = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and not line.startswith("#"):
            for node in by_address.get(parts[0], []):
                lines.append(f"{node} {parts[1]} {parts[2]}")
    return "\n".join(lines) + "\n"


def collect_host_keys(nodes: list[dict], source: str, fetch, timeout: float, interval: float,
                      clock=time.monotonic, sleep=time.sleep) -> dict[str, list[tuple[str, str]]]:
    """Polls ``fetch()`` until every node has a key, or fails after ``timeout`` seconds."""
    wanted = {n["name"] for n in nodes}
    began = clock()
    while True:
        try:
            keys = parse_key_lines(fetch(), wanted, source)
            problem = None
        except PortalUnavailable as e:
            keys, problem = {}, str(e)
        missing = sorted(wanted - set(keys))
        if not missing:
            return keys
        left = timeout - (clock() - began)
        if left <= 0:
            raise PortalError(f"host keys: no key from {source} for {len(missing)} of {len(wanted)} nodes "
                              f"({', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''}) after "
                              f"{_duration(timeout)}{': ' + problem if problem else ''}")
        say(f"host keys: {len(wanted) - len(missing)} of {len(wanted)} nodes have theirs from {source}"
            f"{' (' + problem + ')' if problem else ''}; again in {interval:.0f} s ({_duration(left)} left)")
        sleep(min(interval, max(left, 0)))


def known_hosts_text(nodes: list[dict], keys: dict[str, list[tuple[str, str]]]) -> str:
    lines = []
    for n in sorted(nodes, key=lambda n: n["name"]):
        names = n["public_ip"] + (f",{n['hostname']}" if n.get("hostname") else "")
        lines += [f"{names} {kind} {blob}" for kind, blob in sorted(set(keys[n["name"]]))]
    return "\n".join(lines) + "\n"


# ---- the portal ----------------------------------------------------------------------


class _OneTryWithTimeout:
    """A per-call timeout, and one try per request: Portal.call does the retrying. Mixed
    into xmlrpc's Transport (plain HTTP, the tests' fake) and SafeTransport (the portal)."""

    def __init__(self, timeout: float, **kw):
        super().__init__(**kw)
        self._timeout = timeout

    def make_connection(self, host):
        conn = super().make_connection(host)
        conn.timeout = self._timeout
        return conn

    def request(self, host, handler, request_body, verbose=False):
        return self.single_request(host, handler, request_body, verbose)


class _TimeoutTransport(_OneTryWithTimeout, xmlrpc.client.Transport):
    pass


class _TimeoutSafeTransport(_OneTryWithTimeout, xmlrpc.client.SafeTransport):
    pass


class Portal:
    def __init__(self, url: str, pem: Path, ca_cert: Path | None = None, *, retry_for: float = 600.0,
                 retry_delay: float = 2.0, clock=time.monotonic, sleep=time.sleep):
        self.url = url
        self.retry_for, self.retry_delay = retry_for, retry_delay
        self.clock, self.sleep = clock, sleep
        self.attempts = 0
        if urllib.parse.urlsplit(url).scheme == "https":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            if ca_cert:
                ctx.load_verify_locations(cafile=str(ca_cert))
            else:
                # Like the portal's own tools: Emulab's server certificate is signed by
                # Emulab's CA, which no system trust store has. Pass --ca-cert to verify.
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            try:
                # Emulab certificates can be older than OpenSSL's default security level
                # accepts; the portal's tools lower it the same way.
                ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            except ssl.SSLError:
                pass
            try:
                ctx.load_cert_chain(str(pem), password=_pem_password)
            except ssl.SSLError as e:
                raise UsageError("--pem", f"{pem} is not a usable certificate + key PEM ({e.reason}): "
                                 "download your Emulab SSL certificate again") from None
            transport = _TimeoutSafeTransport(CALL_TIMEOUT, context=ctx)
        else:
            # Plain HTTP is only for the tests' fake portal on 127.0.0.1.
            transport = _TimeoutTransport(CALL_TIMEOUT)
        self.proxy = xmlrpc.client.ServerProxy(url, transport=transport, allow_none=True)

    def call(self, method: str, params: dict, transient_codes=TRANSIENT_CODES) -> dict:
        """One portal call, retried on transient failures with exponential backoff.

        Raises PortalError on a definitive failure, PortalUnavailable when transient
        failures outlast ``retry_for`` seconds. ``self.attempts`` counts the tries.
        """
        began = self.clock()
        delay = self.retry_delay
        self.attempts = 0
        while True:
            self.attempts += 1
            reason = None
            try:
                answer = getattr(self.proxy, f"portal.{method}")(API_VERSION, params)
            except xmlrpc.client.Fault as e:
                if "not supported" in str(e.faultString):
                    raise PortalError(f"{method}: the portal does not know this call: {e.faultString}") from None
                reason = f"the portal failed: {' '.join(str(e.faultString).split())[:200]}"
            except xmlrpc.client.ProtocolError as e:
                if e.errcode < 500 and e.errcode not in (408, 429):
                    raise PortalError(f"{method}: {self.url} answered HTTP {e.errcode} {e.errmsg}") from None
                reason = f"{self.url} answered HTTP {e.errcode} {e.errmsg}"
            except ssl.SSLCertVerificationError as e:
                raise PortalError(f"{method}: {self.url}'s certificate does not verify against --ca-cert: "
                                  f"{e.verify_message}") from None
            except ssl.SSLError as e:
                # The portal refusing our certificate (an alert) is definitive; a cut handshake is not.
                if not isinstance(e, (ssl.SSLEOFError, ssl.SSLZeroReturnError)) and \
                        re.search("ALERT|CERTIFICATE", str(e.reason or "")):
                    raise PortalError(f"{method}: {self.url} refused the TLS handshake ({e.reason}): is the --pem "
                                      "certificate current? download it again from the portal") from None
                reason = f"cannot reach {self.url}: {e}"
            except (OSError, http.client.HTTPException, xmlrpc.client.ResponseError) as e:
                reason = f"cannot reach {self.url}: {e or type(e).__name__}"
            else:
                if not isinstance(answer, dict) or "code" not in answer:
                    raise PortalError(f"{method}: unexpected answer {answer!r:.200}")
                if answer["code"] not in transient_codes:
                    return answer
                output = " ".join(str(answer.get("output") or "").split())[:200]
                reason = f"the portal answered code {answer['code']} ({output or 'try again later'})"
            elapsed = self.clock() - began
            wait = min(delay, MAX_RETRY_DELAY) * random.uniform(0.8, 1.2)
            if elapsed + wait > self.retry_for:
                raise PortalUnavailable(f"{method}: {reason}; gave up after {self.attempts} "
                                        f"attempt{'s' if self.attempts > 1 else ''} in {_duration(elapsed)} "
                                        "(--retry-for)")
            say(f"{method}: {reason}; retry {self.attempts} in {wait:.1f} s "
                f"({_duration(self.retry_for - elapsed)} of retrying left)")
            self.sleep(wait)
            delay *= 2


def _pem_password() -> str:
    password = os.environ.get("K2BENCH_EMULAB_PEM_PASSWORD")
    if password is None:
        raise UsageError("--pem", "its private key is encrypted: set K2BENCH_EMULAB_PEM_PASSWORD "
                         "to the passphrase you gave the portal")
    return password


def _fail(method: str, answer: dict) -> PortalError:
    output = " ".join(str(answer.get("output") or "").split())
    return PortalError(f"{method} failed (code {answer.get('code')}): {output or 'no message'}")


def start(portal: Portal, project: str, name: str, profile: str, duration: int,
          bindings: str | None) -> None:
    params = {"proj": project, "name": name, "profile": profile,
              "duration": str(duration)}  # the portal's tools send the hours as a string
    if bindings:
        params["bindings"] = bindings
    answer = portal.call("startExperiment", params)
    if answer["code"] == ALREADYEXISTS and portal.attempts > 1:
        # An earlier attempt reached the portal before its answer was lost.
        print(f"emulab: {project},{name} exists: started by the first attempt, whose answer was lost", flush=True)
        return
    if answer["code"] == ALREADYEXISTS:
        raise PortalError(f"experiment {project},{name} already exists: terminate it "
                          f"(portal.py terminate) or choose another name")
    if answer["code"] != SUCCESS:
        raise _fail("startExperiment", answer)
    print(f"emulab: started {project},{name} from profile {profile} for {duration} h", flush=True)


def status(portal: Portal, experiment: str) -> dict:
    answer = portal.call("experimentStatus", {"experiment": experiment, "asjson": 1})
    if answer["code"] == SEARCHFAILED:
        raise PortalError(f"experiment {experiment} does not exist (terminated or expired?): "
                          "make emulab-down, then make emulab-up starts a new one")
    if answer["code"] != SUCCESS:
        raise _fail("experimentStatus", answer)
    try:
        doc = json.loads(answer["value"])
    except (TypeError, ValueError):
        raise PortalError(f"experimentStatus: value is not JSON: {answer['value']!r:.200}") from None
    if not isinstance(doc, dict):
        raise PortalError(f"experimentStatus: value is not a JSON object: {answer['value']!r:.200}")
    return doc


def wait(portal: Portal, experiment: str, timeout: float, interval: float,
         clock=time.monotonic, sleep=time.sleep) -> None:
    """Polls until the experiment is ready; prints a line per status change and per minute.

    Raises ExperimentFailed only on a definitive failure (failed, or not ready in time);
    a portal that cannot be reached raises PortalUnavailable.
    """
    began = clock()
    last, last_print = None, began
    while True:
        now_status = str(status(portal, experiment).get("status", "unknown"))
        elapsed = clock() - began
        if now_status != last or clock() - last_print >= 60:
            print(f"emulab: {experiment}: {now_status} ({_duration(elapsed)} elapsed)", flush=True)
            last, last_print = now_status, clock()
        if now_status == "ready":
            return
        if now_status in ("failed", "terminated", "terminating"):
            raise ExperimentFailed(f"experiment {experiment} is {now_status} on the portal (see its page there)")
        if elapsed >= timeout:
            raise ExperimentFailed(f"experiment {experiment} not ready after {_duration(timeout)} "
                                   f"(still {now_status}; raise --timeout / wait_timeout_minutes)")
        sleep(interval)


def manifests(portal: Portal, experiment: str) -> list[str]:
    answer = portal.call("experimentManifests", {"experiment": experiment})
    if answer["code"] == SEARCHFAILED:
        raise PortalError(f"experiment {experiment} does not exist (terminated or expired?)")
    if answer["code"] != SUCCESS:
        raise _fail("experimentManifests", answer)
    try:
        by_aggregate = json.loads(answer["value"])  # {aggregate URN: manifest XML}
    except (TypeError, ValueError):
        raise PortalError(f"experimentManifests: value is not JSON: {answer['value']!r:.200}") from None
    return list(by_aggregate.values())


def expires(portal: Portal, experiment: str) -> dt.datetime:
    doc = status(portal, experiment)
    try:
        when = dt.datetime.fromisoformat(str(doc["expires"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        raise PortalError(f"experimentStatus: no usable expiry in {doc!r:.200}") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def extend(portal: Portal, experiment: str, hours: int, reason: str) -> None:
    """Asks the portal for ``hours`` more; it may grant less (the rest needs an administrator)."""
    before = expires(portal, experiment)
    # For this call "refused" is the portal's answer to the request, not "try again later".
    answer = portal.call("extendExperiment", {"experiment": experiment, "wanted": hours, "reason": reason},
                         transient_codes=TRANSIENT_CODES - {REFUSED})
    if answer["code"] == SEARCHFAILED:
        raise PortalError(f"experiment {experiment} does not exist (terminated or expired?)")
    if answer["code"] != SUCCESS:
        raise _fail("extendExperiment", answer)
    after = expires(portal, experiment)
    granted = (after - before).total_seconds() / 3600
    note = "" if granted >= hours - 0.01 else \
        f"; the portal granted {granted:.1f} of {hours} h: the rest awaits an administrator's approval"
    print(f"emulab: {experiment} now expires {_utc(after)} (was {_utc(before)}){note}", flush=True)


def lifetime(portal: Portal, experiment: str, until: dt.datetime, hours: int) -> None:
    """Extends the experiment so that it lasts until ``until`` (its start + duration_hours).

    The portal can only lengthen an experiment: when it already expires later, this says
    so and changes nothing. ``until`` counts from Terraform's plan, a little before the
    portal's own start (an interactive apply may wait for its "yes"): up to an hour
    earlier than the expiry counts as the expiry asked for.
    """
    current = expires(portal, experiment)
    short = (until - current).total_seconds()
    if short > 300:
        extend(portal, experiment, math.ceil(short / 3600), f"k2bench: duration_hours raised to {hours}")
    elif short < -3600:
        print(f"emulab: {experiment} expires {_utc(current)}, after the {_utc(until)} that duration_hours = "
              f"{hours} asks for; the portal cannot shorten an experiment (make emulab-down ends it)", flush=True)
    else:
        print(f"emulab: {experiment} expires {_utc(current)}, as duration_hours = {hours} asks", flush=True)


def terminate(portal: Portal, experiment: str) -> None:
    answer = portal.call("terminateExperiment", {"experiment": experiment})
    if answer["code"] == SEARCHFAILED:
        # Destroy must be repeatable: an experiment that is gone is what we wanted.
        print(f"emulab: {experiment} does not exist (already terminated or expired)", flush=True)
        return
    if answer["code"] != SUCCESS:
        raise _fail("terminateExperiment", answer)
    print(f"emulab: terminating {experiment}", flush=True)


def _duration(seconds: float) -> str:
    m, s = divmod(int(max(seconds, 0)), 60)
    return f"{m}m{s:02d}s"


def _utc(when: dt.datetime) -> str:
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# ---- command line --------------------------------------------------------------------

COMMANDS = ["start", "wait", "inventory", "extend", "lifetime", "terminate"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="portal.py", description=__doc__.split("\n\n")[0])
    # Every option is accepted before or after the command, so Terraform can append the
    # command to a fixed argument list.
    p.add_argument("command", choices=COMMANDS)
    p.add_argument("--project", help="Emulab project (pid) the experiment belongs to")
    p.add_argument("--name", help="experiment name")
    p.add_argument("--pem", help="your Emulab SSL certificate and key (PEM)")
    p.add_argument("--ca-cert", help="CA certificate to verify the portal's server certificate with")
    p.add_argument("--retry-for", default="600",
                   help="seconds to keep retrying transient portal failures per call (default 600)")
    p.add_argument("--retry-delay", default="2", help="first backoff delay in seconds, doubled per retry")
    p.add_argument("--profile", help="start: profile as project,name or UUID")
    p.add_argument("--duration", help="start: hours until the experiment expires", default="16")
    p.add_argument("--bindings", help="start: JSON object of profile parameter values")
    p.add_argument("--timeout", help="wait: seconds to wait for ready", default="3600")
    p.add_argument("--interval", help="wait, inventory: seconds between polls", default="30")
    p.add_argument("--terminate-on-failure", action="store_true",
                   help="wait: terminate the experiment if it definitively failed (never on portal errors)")
    p.add_argument("--datacenters", help="inventory: datacenter names, comma-separated, in order")
    p.add_argument("--ssh-user", help="inventory: SSH user (default: the login in the --pem certificate)")
    p.add_argument("--ssh-private-key", help="inventory: path of the SSH private key")
    p.add_argument("--out", help="inventory: file to write (default: standard output)")
    p.add_argument("--host-keys", choices=["published", "keyscan"], default="published",
                   help="inventory: where the nodes' host keys come from (keyscan trusts the first answer)")
    p.add_argument("--known-hosts", help="inventory: known_hosts file to write (default: known_hosts next to --out)")
    p.add_argument("--ops-host", default=DEFAULT_OPS, help="inventory: the testbed's ops host (published keys)")
    p.add_argument("--host-keys-timeout", default="900", help="inventory: seconds to wait for every node's key")
    p.add_argument("--hours", help="extend: hours to add; lifetime: duration_hours")
    p.add_argument("--until", help="lifetime: UTC time the experiment should last until (ISO 8601)")
    return p


def _checked(args: argparse.Namespace) -> dict:
    """Validates the flags a command needs; raises UsageError naming the first bad one."""
    if not args.project:
        raise UsageError("--project", "missing: give your Emulab project id (TF_VAR_project)")
    if not PROJECT.match(args.project):
        raise UsageError("--project", f"{args.project!r} is not an Emulab project id (letters, digits, '-')")
    if not args.name:
        raise UsageError("--name", "missing: give the experiment name")
    if not EXPERIMENT.match(args.name):
        raise UsageError("--name", f"{args.name!r}: use 1-16 letters, digits or '-', starting with a letter")
    if not args.pem:
        raise UsageError("--pem", "missing: give the path of your Emulab SSL certificate (PEM)")
    pem = Path(os.path.expanduser(args.pem))
    if not pem.is_file() or not os.access(pem, os.R_OK):
        raise UsageError("--pem", f"{pem} is not a readable file: download your Emulab SSL certificate "
                         "from the portal (Download Credentials) and give its path")
    ca = Path(os.path.expanduser(args.ca_cert)) if args.ca_cert else None
    if ca is not None and not ca.is_file():
        raise UsageError("--ca-cert", f"{ca} is not a file")
    out = {"pem": pem, "ca": ca, "retry_for": _number(args.retry_for, "--retry-for"),
           "retry_delay": _number(args.retry_delay, "--retry-delay")}
    if args.command == "start":
        if not args.profile:
            raise UsageError("--profile", "missing: give the profile as project,name (see terraform/emulab/README.md)")
        if not PROFILE.match(args.profile):
            raise UsageError("--profile", f"{args.profile!r} is neither project,name nor a UUID")
        out["duration"] = _int(args.duration, "--duration", 1)
        if args.bindings:
            try:
                if not isinstance(json.loads(args.bindings), dict):
                    raise ValueError
            except ValueError:
                raise UsageError("--bindings", "must be a JSON object of parameter values") from None
    if args.command in ("wait", "inventory"):
        out["timeout"] = _number(args.timeout, "--timeout")
        out["interval"] = _number(args.interval, "--interval")
    if args.command == "inventory":
        dcs = [d.strip() for d in (args.datacenters or "").split(",") if d.strip()]
        if args.datacenters is not None and not dcs:
            raise UsageError("--datacenters", "give datacenter names, comma-separated (VA,CA,...)")
        out["datacenters"] = dcs or None
        user = args.ssh_user or user_from_certificate(pem)
        if not user:
            raise UsageError("--ssh-user", f"the certificate {pem} names no Emulab user: set the Terraform "
                             "variable ssh_user (TF_VAR_ssh_user) to your Emulab login")
        if not LOGIN.match(user):
            raise UsageError("--ssh-user", f"{user!r} is not an Emulab user name (lower case letters, digits, '-', '_')")
        out["ssh_user"] = user
        if args.known_hosts:
            out["known_hosts"] = Path(os.path.expanduser(args.known_hosts))
        elif args.out:
            out["known_hosts"] = Path(args.out).parent / "known_hosts"
        else:
            raise UsageError("--known-hosts", "give the file for the nodes' host keys (or --out; it goes next to it)")
        if not HOST.match(args.ops_host):
            raise UsageError("--ops-host", f"{args.ops_host!r} is not a host name")
        out["host_keys_timeout"] = _number(args.host_keys_timeout, "--host-keys-timeout")
    if args.command in ("extend", "lifetime"):
        if not args.hours:
            raise UsageError("--hours", "missing: give a whole number of hours, e.g. make emulab-extend HOURS=8")
        out["hours"] = _int(args.hours, "--hours", 1)
    if args.command == "lifetime":
        try:
            until = dt.datetime.fromisoformat(str(args.until).replace("Z", "+00:00"))
        except ValueError:
            raise UsageError("--until", f"{args.until!r} is not an ISO 8601 time (2026-11-25T18:00:00Z)") from None
        out["until"] = until if until.tzinfo else until.replace(tzinfo=dt.timezone.utc)
    return out


def _int(text: str, field: str, least: int) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise UsageError(field, f"must be a whole number, got {text!r}") from None
    if value < least:
        raise UsageError(field, f"must be at least {least}, got {value}")
    return value


def _number(text: str, field: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(field, f"must be a number of seconds, got {text!r}") from None
    if not value >= 0 or math.isinf(value):
        raise UsageError(field, f"must be a finite number, not negative, got {text!r}")
    return value


def write_inventory(portal: Portal, args: argparse.Namespace, opts: dict, experiment: str) -> None:
    docs = manifests(portal, experiment)
    nodes = manifest_nodes(docs, opts["datacenters"])
    user = opts["ssh_user"]
    logins = {login for n in nodes for login in n["logins"]}
    if logins and user not in logins:
        say(f"warning: {user} is not among the manifest's logins ({', '.join(sorted(logins))}): "
            "is ssh_user your Emulab login?")
    known_hosts: Path = opts["known_hosts"]
    inventory = inventory_from_manifests(
        docs, experiment_id=args.name, datacenters=opts["datacenters"], ssh_user=user,
        private_key=args.ssh_private_key,
        known_hosts=os.path.relpath(known_hosts, Path(args.out).parent) if args.out else str(known_hosts))
    if args.host_keys == "published":
        source = f"{args.ops_host}:{HOSTKEY_DIR.format(project=args.project, name=args.name)}"

        def fetch():
            return fetch_published_keys(ssh_user=user, ops=args.ops_host, project=args.project,
                                        name=args.name, private_key=args.ssh_private_key)
    else:
        source = "ssh-keyscan (trusted on first use, not verified)"
        say("warning: host_keys = keyscan: the nodes' keys are taken from whoever answers on their "
            "control addresses now, and are not verified")

        def fetch():
            return keyscan({n["name"]: n["public_ip"] for n in nodes})
    keys = collect_host_keys(nodes, source, fetch, opts["host_keys_timeout"], max(opts["interval"], 1.0))
    # known_hosts first: an inventory on disk always has its keys next to it.
    _write_atomically(known_hosts, known_hosts_text(nodes, keys))
    print(f"emulab: wrote {known_hosts} ({sum(len(k) for k in keys.values())} keys of {len(nodes)} nodes "
          f"from {source})", flush=True)
    text = json.dumps(inventory, indent=2) + "\n"
    if args.out:
        _write_atomically(Path(args.out), text)
        print(f"emulab: wrote {args.out}", flush=True)
    else:
        sys.stdout.write(text)


# What the user does after the portal stayed unreachable, per command.
UNAVAILABLE_NEXT = {
    "start": "may or may not have started: make emulab-up again once the portal answers "
             "(Terraform terminates a half-started one first), or make emulab-down",
    "wait": "was left as it is, not terminated: make emulab-up again once the portal answers "
            "waits for the same experiment",
    "inventory": "was left as it is: make emulab-up again once the portal answers writes the inventory",
    "extend": "was not extended: run the same command again once the portal answers",
    "lifetime": "was not extended: make emulab-up again once the portal answers",
    "terminate": "may still be running: make emulab-down again once the portal answers",
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        opts = _checked(args)
        portal = Portal(os.environ.get("K2BENCH_EMULAB_URL") or DEFAULT_URL, opts["pem"], opts["ca"],
                        retry_for=opts["retry_for"], retry_delay=opts["retry_delay"])
        experiment = f"{args.project},{args.name}"
        if args.command == "start":
            start(portal, args.project, args.name, args.profile, opts["duration"], args.bindings)
        elif args.command == "terminate":
            terminate(portal, experiment)
        elif args.command == "extend":
            extend(portal, experiment, opts["hours"], f"k2bench: make emulab-extend HOURS={opts['hours']}")
        elif args.command == "lifetime":
            lifetime(portal, experiment, opts["until"], opts["hours"])
        elif args.command == "inventory":
            write_inventory(portal, args, opts, experiment)
        else:
            try:
                wait(portal, experiment, opts["timeout"], opts["interval"])
            except ExperimentFailed as e:
                # Definitive: the nodes are of no use, so release them when asked to.
                if not args.terminate_on_failure:
                    raise
                try:
                    terminate(portal, experiment)
                except PortalError as t:
                    raise PortalError(f"{e}; terminating it failed too ({t}): make emulab-down") from None
                raise PortalError(f"{e}: terminated it; make emulab-down, then make emulab-up starts a new one") \
                    from None
    except UsageError as e:
        print(f"portal.py: {e}", file=sys.stderr)
        return 2
    except PortalUnavailable as e:
        # The experiment may be running fine: never terminate it for this.
        print(f"portal.py: {e}; {args.project},{args.name} {UNAVAILABLE_NEXT[args.command]}", file=sys.stderr)
        return 1
    except PortalError as e:
        print(f"portal.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
