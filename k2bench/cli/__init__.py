"""The k2bench command line: run experiments, check experiment files, re-derive summaries,
deploy clusters and place replicas (one module per group of commands)."""
from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from .bench import cmd_bench_throughput
from .common import REPO, plugin_commands
from .deploy import cmd_deploy, cmd_netem_reset
from .place import cmd_demand, cmd_place
from .run import cmd_check, cmd_placement_report, cmd_run, cmd_show, cmd_summarize, cmd_systems, cmd_validate


def version_text() -> str:
    """The package's version, and the commit of the checkout it runs from (if it is one)."""
    from importlib.metadata import PackageNotFoundError, version

    from ..rundir import git_info
    try:
        text = f"k2bench {version('k2bench')}"
    except PackageNotFoundError:
        text = "k2bench (not installed)"
    git = git_info(REPO)
    if git["git_commit"] != "unknown":
        text += f" (git {git['git_commit'][:12]}{', uncommitted changes' if git['git_dirty'] else ''}, {REPO})"
    return text


class _Version(argparse.Action):
    """--version, asking git only when given."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="the version and the git commit of this checkout")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


# --set on run, show and validate: one field of the experiment for this command only
SET_FLAG = dict(action="append", metavar="FIELD=VALUE",
                help="set a field of the experiment for this run (repeatable), the value as YAML, e.g. "
                     "workload.zipf=1.4 or sweep.workload.zipf=[0.9,1.2]; checked as the file's fields, kept in "
                     "the manifest (overrides)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="k2bench", description=__doc__)
    p.add_argument("--version", action=_Version)
    p.add_argument("--jar", default=str(REPO / "system/launcher/target/k2bench.jar"))
    p.add_argument("--java", default="java")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an experiment of workloads/ on this machine")
    r.add_argument("experiment", help="name of a file in workloads/ (without .yaml) or a path")
    r.add_argument("--runs", default=str(REPO / "runs"))
    r.add_argument("--resume", metavar="RUN_DIR", help="continue a run, skipping completed points")
    r.add_argument("--systems", help="comma-separated subset of the experiment's systems")
    r.add_argument("--set", **SET_FLAG)
    r.add_argument("--no-check", action="store_true",
                   help="skip the consistency checker after each trial (the histories are still kept)")
    r.add_argument("--inventory", metavar="JSON",
                   help="run on the machines of this inventory over SSH (terraform output; see k2bench/deploy/inventory.py)")
    r.add_argument("--tc-verify", metavar="FILE",
                   help="netem inventories: the deploy's ping verification (default runs/.deploy/<id>/tc/verify.json), "
                        "kept in the run's manifest")
    r.add_argument("--known-hosts", metavar="FILE",
                   help="SSH host keys of the inventory's machines (default: the inventory's ssh.known_hosts)")
    r.add_argument("--servers-per-dc", type=int, metavar="N",
                   help="servers per datacenter, overriding the experiment's topology (the inventory needs N "
                        "server hosts per datacenter)")
    r.add_argument("--lease-s", type=float, default=60.0, metavar="S",
                   help="remote processes stop on their own S seconds after the orchestrator stopped refreshing "
                        "their lease (it died or lost the network)")
    r.add_argument("--ssh-timeout", type=float, default=60.0, metavar="S",
                   help="the longest a remote command may take; a host that does not answer within it fails the run")
    r.add_argument("--base-port", type=int, default=17000, help="first server port on remote machines")
    r.add_argument("--remote-jar", default="/opt/k2bench/k2bench.jar",
                   help="the jar on remote machines (where ansible's k2bench_server role puts it)")
    r.set_defaults(func=cmd_run)
    b = sub.add_parser("bench-throughput", help="each system's peak per Fig. 9 setting, its CPU, the echo ceiling")
    b.add_argument("--settings", default="all", metavar="S[,S]",
                   help="Fig. 9 settings to climb: all (default) or a comma list of "
                        "'default', 'write 5%%', 'zipf 1.4', 'zipf 0.9', 'f=1', 'f=3'")
    b.add_argument("--no-echo", action="store_true", help="skip the echo ceiling")
    b.add_argument("--quick", action="store_true",
                   help="one setting (default unless --settings names another) on a coarser ladder with shorter "
                        "phases (workloads/bench-throughput-quick.yaml): about 15 minutes, for checking a change")
    b.add_argument("--resume", metavar="RUN_DIR",
                   help="continue an interrupted bench: points already measured are read, not run again")
    b.add_argument("--runs", default=str(REPO / "runs"))
    b.set_defaults(func=cmd_bench_throughput)
    v = sub.add_parser("validate", help="check experiment files without running anything")
    v.add_argument("experiments", nargs="*")
    v.add_argument("--set", **SET_FLAG)
    v.set_defaults(func=cmd_validate)
    sh = sub.add_parser("show", help="an experiment as it runs: extends and defaults applied, as YAML")
    sh.add_argument("experiment", help="name of a file in workloads/ (without .yaml) or a path")
    sh.add_argument("--set", **SET_FLAG)
    sh.set_defaults(func=cmd_show)
    sy = sub.add_parser("systems", help="the bundled systems: their claims, the placements they run on, their own options")
    sy.set_defaults(func=cmd_systems)
    d = sub.add_parser("deploy", help="prepare an inventory's machines with Ansible (site.yml)")
    d.add_argument("--inventory", required=True, metavar="JSON")
    d.add_argument("--known-hosts", metavar="FILE",
                   help="SSH host keys of the machines (default: the inventory's ssh.known_hosts)")
    d.add_argument("--experiment", metavar="NAME",
                   help="check that the inventory has the experiment's servers per datacenter, and take the tc "
                        "RTT matrix from its topology")
    d.add_argument("--servers-per-dc", type=int, metavar="N", help="servers per datacenter, overriding the experiment's")
    d.add_argument("--topology", metavar="FILE",
                   help="RTT matrix for tc/netem (latency netem) when no experiment is given, "
                        "e.g. workloads/topologies/paper-local.yaml")
    d.add_argument("--extra-var", action="append", metavar="NAME=VALUE", help="an Ansible variable (repeatable)")
    d.add_argument("--workdir", help="where the Ansible inventory and tc scripts go (default runs/.deploy/<id>)")
    d.set_defaults(func=cmd_deploy)
    n = sub.add_parser("netem-reset", help="remove k2bench's tc qdiscs from an inventory's machines")
    n.add_argument("--inventory", required=True, metavar="JSON")
    n.add_argument("--known-hosts", metavar="FILE",
                   help="SSH host keys of the machines (default: the inventory's ssh.known_hosts)")
    n.add_argument("--extra-var", action="append", metavar="NAME=VALUE", help="an Ansible variable (repeatable)")
    n.add_argument("--workdir", help="where the Ansible inventory and reset scripts go (default runs/.deploy/<id>)")
    n.set_defaults(func=cmd_netem_reset)
    c = sub.add_parser("check", help="check a run's histories for consistency again (exit 1 on violations)")
    c.add_argument("run")
    c.set_defaults(func=cmd_check)
    pr = sub.add_parser("placement-report", help="a run's read latency, the placement model's prediction beside "
                        "the measurement (normal and after a kill)")
    pr.add_argument("run")
    pr.set_defaults(func=cmd_placement_report)
    s = sub.add_parser("summarize", help="re-derive the summaries of a run from its raw logs")
    s.add_argument("run")
    s.set_defaults(func=cmd_summarize)
    for name, ep in sorted(plugin_commands().items()):
        sub.add_parser(name, add_help=False, help=f"from {ep.module} (k2bench {name} --help: its options)") \
            .set_defaults(plugin=ep)
    dm = sub.add_parser("demand", help="a run's reads and writes per key and datacenter, as parquet (for place)")
    dm.add_argument("run", help="a run directory (runs/<stamp>_<experiment>, or runs/latest)")
    dm.add_argument("--system", help="whose trials (default: the run's first system)")
    dm.add_argument("--out", metavar="FILE", help="write the parquet here (default: stdout, not a terminal)")
    dm.set_defaults(func=cmd_demand)
    pl = sub.add_parser("place", help="latency-aware replica placement (BA or N-1C) from a demand: a placement table")
    pl.add_argument("--model", metavar="ba|n-1c",
                    help="ba: the least mean read latency in normal operation; n-1c: under the worst single "
                         "datacenter failure")
    pl.add_argument("--demand", metavar="PARQUET", help="per-key demand (k2bench demand RUN > demand.parquet)")
    pl.add_argument("--topology", metavar="FILE", help="topology file (datacenters, rtt_ms), e.g. "
                                                       "workloads/topologies/paper-local.yaml")
    pl.add_argument("--out", metavar="FILE", help="the table to write (its predictions go to FILE.json)")
    pl.add_argument("--keys", metavar="N", help="place the keys user0..user<N-1> (default: the demand's largest id + 1)")
    pl.add_argument("--balance", default="1.2", metavar="B",
                    help="no datacenter holds more than B x f x keys / datacenters keys (default 1.2)")
    pl.add_argument("--one-per-group", action="store_true",
                    help="one replica in each of the f groups of datacenters (index modulo f), as RAD needs")
    pl.add_argument("--replication-factor", metavar="F", help="replicas per key (default: the topology's)")
    pl.add_argument("--buckets", metavar="SPEC",
                    help="bucketing: hot=N (most-read keys with a bucket each, 256), levels=N (read share "
                         "quantisation, 4), chunk=N (keys per bucket at most, keys/(4 x datacenters))")
    pl.add_argument("--time-limit", default="600", metavar="S", help="the solver's time limit (default 600 s)")
    pl.add_argument("--objective", default="mean", metavar="mean|pNN",
                    help="what to minimise: the mean read latency (default) or a percentile, e.g. p90 (N-1C: "
                         "under the worst single-datacenter failure)")
    pl.add_argument("--cache-keys", default="0", metavar="N",
                    help="count a datacenter cache of N keys per datacenter in the objective (K2's: "
                         "server.cache_fraction x keys; default 0: none)")
    pl.set_defaults(func=cmd_place)
    args, rest = p.parse_known_args(argv)
    if getattr(args, "plugin", None) is not None:
        return args.plugin.load()(rest)
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.func(args)
    except ConfigError as e:
        for problem in e.errors:  # one line each (several: ConfigErrors)
            print(f"k2bench: {problem}", file=sys.stderr)
        return 2

