"""Clusters: ``deploy`` (Ansible's site.yml on an inventory's machines) and ``netem-reset``."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import experiment, rundir
from ..deploy import inventory
from ..errors import ConfigError
from ..env import Env
from ..spec.topology import topology_doc
from ..systems import local as systems_local
from .common import REPO, _in_file, check_cluster_shape, servers_per_dc_override, without_jar


def _extra_vars(args, extra: dict) -> dict:
    import yaml

    for item in args.extra_var or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError("--extra-var", f"{item!r} is not NAME=VALUE")
        extra[key] = yaml.safe_load(value)
    return extra


def _deploy_experiment(args) -> dict | None:
    """The experiment of `deploy --experiment` (with --servers-per-dc applied), resolved
    without the jar: the deploy may run before the jar is built on this machine."""
    if not getattr(args, "experiment", None):
        if getattr(args, "servers_per_dc", None) is not None:
            raise ConfigError("--servers-per-dc", "needs --experiment NAME (the experiment whose shape to check)")
        return None
    path = experiment.find(REPO / "workloads", args.experiment)
    with _in_file(path):
        # The jar's descriptors when it is built (--jar), and the file's own system names stand
        # for those it does not know: the deploy checks the experiment's shape, not its systems.
        known = systems_local(Path(args.jar)) if getattr(args, "jar", None) else systems_local()
        doc, known = without_jar(experiment.load_file(path), known)
        exp = experiment.resolve(doc, path.stem, known)
    return servers_per_dc_override(exp, getattr(args, "servers_per_dc", None))


def _tc_rtt_ms(args, exp: dict | None = None) -> dict:
    """The RTT matrix tc emulates: the topology of the experiment (--experiment: its file
    with the experiment's overrides, rtt_scale applied), else the --topology file."""
    from ..deploy.tc import rtt_matrix
    from ..spec.files import yaml_file
    if getattr(args, "experiment", None) and args.topology:
        raise ConfigError("--topology", "give --experiment NAME or --topology FILE, not both "
                          "(the experiment's own topology is the one its runs expect)")
    if exp is None:
        exp = _deploy_experiment(args)
    if exp is not None:
        env = Env(repo=REPO, jar=Path(args.jar), deployment=None, java=args.java)
        matrices: list[dict] = []
        for _, _, cfg in experiment.system_points(exp):
            m = rtt_matrix(topology_doc(env, cfg), "topology")
            if m not in matrices:
                matrices.append(m)
        if len(matrices) > 1:
            raise ConfigError("--experiment", f"{exp['name']} sweeps the RTT matrix (topology.file or rtt_scale), "
                              "but tc holds one matrix per deploy: split the sweep into one experiment per value")
        return matrices[0]
    if args.topology:
        path = Path(args.topology)
        try:
            doc = yaml_file(path)
        except FileNotFoundError:
            raise ConfigError("--topology", f"{path} does not exist") from None
        except ConfigError as e:  # a key given twice, a syntax error: the file's line
            raise ConfigError("--topology", str(e)) from None
        return rtt_matrix(doc, str(path))
    raise ConfigError("--experiment", "the inventory's latency is netem, so tc needs an RTT matrix: "
                      "pass --experiment NAME (its topology) or --topology FILE")


def _playbook(inv, hosts_file: Path, playbook: str, known_hosts: Path) -> int:
    """Runs a playbook of ansible/ on the inventory's machines (forks and host keys:
    deploy.ansible.playbook_argv)."""
    import subprocess

    from ..deploy.ansible import playbook_argv
    cmd = playbook_argv(inv, hosts_file, REPO / "ansible" / playbook, known_hosts,
                        Path(sys.executable).parent / "ansible-playbook")
    print(f"ansible inventory: {hosts_file}", flush=True)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible" / "ansible.cfg"))
    return subprocess.run(cmd, env=env).returncode


def cmd_deploy(args) -> int:
    """Prepares an inventory's machines with Ansible (ansible/site.yml): Java, the jar, the
    client and server directories, and tc/netem latency where the inventory says so."""
    import yaml

    from ..deploy.ansible import known_hosts, to_ansible
    inv = inventory.load(args.inventory)
    # The shape check before Ansible runs; tc's matrix comes from the same experiment.
    exp = _deploy_experiment(args)
    if exp is not None:
        check_cluster_shape(exp, inv, args.inventory)
    keys = known_hosts(inv, args.inventory, args.known_hosts)
    jar = Path(args.jar)
    if not jar.exists():
        raise ConfigError("--jar", f"{jar} is missing; run `make build`")
    work = Path(args.workdir) if args.workdir else REPO / "runs" / ".deploy" / inv.experiment_id
    extra = _extra_vars(args, {"k2bench_jar": str(jar.resolve()), "k2bench_tc_dir": str((work / "tc").resolve())})
    if inv.latency == "netem":
        from ..deploy.tc import write_scripts
        write_scripts(inv, _tc_rtt_ms(args, exp), work / "tc")
        # The netem role writes it anew; one left from an earlier deploy would be taken for this one's.
        (work / "tc" / "verify.json").unlink(missing_ok=True)
    hosts_file = work / "hosts.yml"
    rundir.write_text(hosts_file, yaml.safe_dump(to_ansible(inv, extra), sort_keys=False))
    return _playbook(inv, hosts_file, "site.yml", keys)


def cmd_netem_reset(args) -> int:
    """Removes k2bench's tc qdiscs from every machine of an inventory (ansible/netem-reset.yml)."""
    import yaml

    from ..deploy.ansible import known_hosts, to_ansible
    from ..deploy.tc import write_reset_scripts
    inv = inventory.load(args.inventory)
    keys = known_hosts(inv, args.inventory, args.known_hosts)
    work = Path(args.workdir) if args.workdir else REPO / "runs" / ".deploy" / inv.experiment_id
    extra = _extra_vars(args, {"k2bench_tc_dir": str((work / "tc").resolve())})
    write_reset_scripts(inv, work / "tc")
    hosts_file = work / "hosts-reset.yml"
    rundir.write_text(hosts_file, yaml.safe_dump(to_ansible(inv, extra), sort_keys=False))
    return _playbook(inv, hosts_file, "netem-reset.yml", keys)
