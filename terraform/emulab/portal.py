#!/usr/bin/env python3
"""Start, wait for, describe and terminate an Emulab experiment through the portal API.

Terraform's local-exec runs this file (terraform/emulab/main.tf), so it needs nothing but
python3's standard library. It makes the XML-RPC calls the portal's own command-line tools
make: ``portal.startExperiment``, ``portal.experimentStatus``, ``portal.experimentManifests``
and ``portal.terminateExperiment``, each called as ``method(API_VERSION, {params})`` and
answering ``{"code", "value", "output"}``. It authenticates with the user's Emulab SSL
certificate (the PEM file the portal hands out) as a TLS client certificate.

    portal.py start     --project P --name N --pem ~/.ssl/emulab.pem --profile P,k2bench \\
                        [--duration 16] [--bindings '{"servers_per_dc": "4"}']
    portal.py wait      --project P --name N --pem ... [--timeout 3600] [--terminate-on-failure]
    portal.py inventory --project P --name N --pem ... [--datacenters VA,CA] [--out inventory.json]
    portal.py terminate --project P --name N --pem ...

``inventory`` turns the experiment's manifest RSpec into the k2bench inventory
(k2bench/inventory.py): one host per node named ``<dc>-server-<i>`` or ``<dc>-client-<i>``
(terraform/emulab/profile.py names them so), public_ip = the node's control-network
address, private_ip = its address on the experiment LAN.

K2BENCH_EMULAB_URL overrides the endpoint (the tests point it at a plain-HTTP fake);
K2BENCH_EMULAB_PEM_PASSWORD unlocks a PEM whose key is encrypted. Bad input exits 2 with
one line naming the flag; a portal error exits 1 with one line.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import sys
import time
import urllib.parse
import xml.etree.ElementTree as ET
import xmlrpc.client
from pathlib import Path

DEFAULT_URL = "https://boss.emulab.net:3069/usr/testbed"
API_VERSION = 0.1  # the portal checks the client's API version; its tools send 0.1

# Response codes of the portal's XML-RPC server (emulabclient.py).
SUCCESS, SEARCHFAILED, ALREADYEXISTS = 0, 12, 17

RSPEC = "{http://www.geni.net/resources/rspec/3}"
NODE_NAME = re.compile(r"^([a-z][a-z0-9]*)-(server|client)-(\d+)$")
PROJECT = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9]{0,47}$")
EXPERIMENT = re.compile(r"^[A-Za-z][-A-Za-z0-9]{0,15}$")
PROFILE = re.compile(r"^([-A-Za-z0-9]+,[-A-Za-z0-9_]+|[0-9a-fA-F-]{36})$")


class UsageError(Exception):
    """Bad input: one line naming the flag and the fix."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")


class PortalError(Exception):
    """The portal refused or failed a call, or the experiment did not come up."""


# ---- the manifest -> inventory (pure) ------------------------------------------------


def inventory_from_manifests(manifests: list[str], *, experiment_id: str,
                             datacenters: list[str] | None = None, ssh_user: str | None = None,
                             private_key: str | None = None) -> dict:
    """The k2bench inventory of the nodes in ``manifests`` (manifest RSpec XML documents).

    Datacenters keep the order of ``datacenters`` when given (a node whose prefix is not
    one of them is an error), else the order nodes first appear; hosts are servers then
    clients, each by index. ``ssh_user`` defaults to the login the manifest lists.
    """
    names = {dc.lower(): dc for dc in (datacenters or [])}
    found: dict[str, list[tuple[int, int, dict]]] = {dc: [] for dc in (datacenters or [])}
    login_user = None
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
            login = node.find(f"{RSPEC}services/{RSPEC}login")
            if login_user is None and login is not None:
                login_user = login.get("username")
            found.setdefault(dc, []).append((0 if role == "server" else 1, index, {
                "name": name, "role": role, "public_ip": control, "private_ip": lan, "ssh_port": 22}))
    user = ssh_user or login_user
    if not user:
        raise UsageError("--ssh-user", "the manifest lists no login user: give your Emulab user name")
    empty = [dc for dc, hosts in found.items() if not hosts]
    if empty or not found:
        raise PortalError(f"the manifest has no nodes for datacenter(s) {', '.join(empty) or '(any)'}: "
                          "were the profile's parameters (bindings) the same datacenters?")
    ssh = {"user": user}
    if private_key:
        ssh["private_key"] = private_key
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


# ---- the portal ----------------------------------------------------------------------


class Portal:
    def __init__(self, url: str, pem: Path, ca_cert: Path | None = None):
        self.url = url
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
            self.proxy = xmlrpc.client.ServerProxy(url, context=ctx, allow_none=True)
        else:
            # Plain HTTP is only for the tests' fake portal on 127.0.0.1.
            self.proxy = xmlrpc.client.ServerProxy(url, allow_none=True)

    def call(self, method: str, params: dict) -> dict:
        try:
            answer = getattr(self.proxy, f"portal.{method}")(API_VERSION, params)
        except xmlrpc.client.Fault as e:
            raise PortalError(f"{method}: the portal failed: {e.faultString}") from None
        except xmlrpc.client.ProtocolError as e:
            raise PortalError(f"{method}: {self.url} answered HTTP {e.errcode} {e.errmsg}") from None
        except (OSError, ssl.SSLError) as e:
            raise PortalError(f"{method}: cannot reach {self.url}: {e}") from None
        if not isinstance(answer, dict) or "code" not in answer:
            raise PortalError(f"{method}: unexpected answer {answer!r:.200}")
        return answer


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
    if answer["code"] == ALREADYEXISTS:
        raise PortalError(f"experiment {project},{name} already exists: terminate it "
                          f"(portal.py terminate) or choose another name")
    if answer["code"] != SUCCESS:
        raise _fail("startExperiment", answer)
    print(f"emulab: started {project},{name} from profile {profile} for {duration} h", flush=True)


def status(portal: Portal, experiment: str) -> dict:
    answer = portal.call("experimentStatus", {"experiment": experiment, "asjson": 1})
    if answer["code"] == SEARCHFAILED:
        raise PortalError(f"experiment {experiment} does not exist (terminated or expired?)")
    if answer["code"] != SUCCESS:
        raise _fail("experimentStatus", answer)
    try:
        doc = json.loads(answer["value"])
    except (TypeError, ValueError):
        raise PortalError(f"experimentStatus: value is not JSON: {answer['value']!r:.200}") from None
    return doc


def wait(portal: Portal, experiment: str, timeout: float, interval: float,
         clock=time.monotonic, sleep=time.sleep) -> None:
    """Polls until the experiment is ready; prints a line per status change and per minute."""
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
            raise PortalError(f"experiment {experiment} is {now_status}: see its page on the portal")
        if elapsed >= timeout:
            raise PortalError(f"experiment {experiment} not ready after {_duration(timeout)} "
                              f"(still {now_status}): raise --timeout or look at the portal")
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
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# ---- command line --------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="portal.py", description=__doc__.split("\n\n")[0])
    # Every option is accepted before or after the command, so Terraform can append the
    # command to a fixed argument list.
    p.add_argument("command", choices=["start", "wait", "inventory", "terminate"])
    p.add_argument("--project", help="Emulab project (pid) the experiment belongs to")
    p.add_argument("--name", help="experiment name")
    p.add_argument("--pem", help="your Emulab SSL certificate and key (PEM)")
    p.add_argument("--ca-cert", help="CA certificate to verify the portal's server certificate with")
    p.add_argument("--profile", help="start: profile as project,name or UUID")
    p.add_argument("--duration", help="start: hours until the experiment expires", default="16")
    p.add_argument("--bindings", help="start: JSON object of profile parameter values")
    p.add_argument("--timeout", help="wait: seconds to wait for ready", default="3600")
    p.add_argument("--interval", help="wait: seconds between status polls", default="30")
    p.add_argument("--terminate-on-failure", action="store_true",
                   help="wait, inventory: terminate the experiment if it cannot be used")
    p.add_argument("--datacenters", help="inventory: datacenter names, comma-separated, in order")
    p.add_argument("--ssh-user", help="inventory: SSH user (default: the manifest's login user)")
    p.add_argument("--ssh-private-key", help="inventory: path of the SSH private key")
    p.add_argument("--out", help="inventory: file to write (default: standard output)")
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
    out = {"pem": pem, "ca": ca}
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
    if args.command == "wait":
        out["timeout"] = _number(args.timeout, "--timeout")
        out["interval"] = _number(args.interval, "--interval")
    if args.command == "inventory":
        dcs = [d.strip() for d in (args.datacenters or "").split(",") if d.strip()]
        if args.datacenters is not None and not dcs:
            raise UsageError("--datacenters", "give datacenter names, comma-separated (VA,CA,...)")
        out["datacenters"] = dcs or None
    return out


def _int(text: str, field: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(field, f"must be a whole number, got {text!r}") from None
    if value < least:
        raise UsageError(field, f"must be at least {least}, got {value}")
    return value


def _number(text: str, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(field, f"must be a number of seconds, got {text!r}") from None
    if value < 0:
        raise UsageError(field, f"must not be negative, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        opts = _checked(args)
        portal = Portal(os.environ.get("K2BENCH_EMULAB_URL") or DEFAULT_URL, opts["pem"], opts["ca"])
        experiment = f"{args.project},{args.name}"
        if args.command == "start":
            start(portal, args.project, args.name, args.profile, opts["duration"], args.bindings)
        elif args.command == "terminate":
            terminate(portal, experiment)
        else:
            try:
                if args.command == "wait":
                    wait(portal, experiment, opts["timeout"], opts["interval"])
                else:
                    inventory = inventory_from_manifests(
                        manifests(portal, experiment), experiment_id=args.name,
                        datacenters=opts["datacenters"], ssh_user=args.ssh_user,
                        private_key=args.ssh_private_key)
                    text = json.dumps(inventory, indent=2) + "\n"
                    if args.out:
                        _write_atomically(Path(args.out), text)
                        print(f"emulab: wrote {args.out}", flush=True)
                    else:
                        sys.stdout.write(text)
            except (PortalError, UsageError):
                # Terraform taints a resource whose create provisioner fails and then never
                # runs its destroy provisioner: terminate here or the nodes stay reserved.
                if args.terminate_on_failure:
                    try:
                        terminate(portal, experiment)
                    except PortalError as e:
                        print(f"portal.py: could not terminate {experiment} either: {e}", file=sys.stderr)
                raise
    except UsageError as e:
        print(f"portal.py: {e}", file=sys.stderr)
        return 2
    except PortalError as e:
        print(f"portal.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
