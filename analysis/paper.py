"""The papers' casts (which bundled system plays which part in a paper's claims,
workloads/papers/<paper>.yaml) and the K2 paper's reference figures (§VII): sanity checks to
put next to a run, not targets to tune to."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from k2bench.bench import FIG9_SETTINGS
from k2bench.spec import schema

PAPERS_DIR = Path(__file__).resolve().parents[1] / "workloads" / "papers"


@dataclass(frozen=True)
class Cast:
    """Which bundled system plays which part in a paper's claims (workloads/papers/<paper>.yaml):
    the claims name parts ("proposed", "baseline", ...), so no Python names a system."""
    paper: str  # the descriptors' paper id
    systems: dict  # part -> system name
    fig9_ktxn_per_s: dict = field(default_factory=dict)  # system -> setting -> K txn/s
    title: str = ""  # the paper, as a scorecard names it
    reproduce: dict = field(default_factory=dict)  # scale -> its plan (analysis/reproduce.py)

    def __getitem__(self, part: str) -> str:
        return self.systems[part]

    @classmethod
    def load(cls, file: str) -> "Cast":
        doc = yaml.safe_load((PAPERS_DIR / file).read_text())
        return cls(doc["paper"], dict(doc["systems"]),
                   {doc["systems"][part]: dict(v) for part, v in (doc.get("fig9_ktxn_per_s") or {}).items()},
                   doc.get("title", doc["paper"]), dict(doc.get("reproduce") or {}))


K2_PAPER = Cast.load("k2.yaml")
PARIS_PAPER = Cast.load("paris.yaml")
KARMA_PAPER = Cast.load("karma.yaml")
PLACEMENT_PAPER = Cast.load("placement.yaml")

# The systems as the parts they play in each paper's claims: every module of analysis/ names
# them so, after the paper's own names for them.
K2, RAD, PARIS_STAR = (K2_PAPER[part] for part in ("proposed", "baseline", "second_baseline"))
PARIS, BPR, NOCC = (PARIS_PAPER[part] for part in ("proposed", "blocking", "no_cc"))

# Fig. 9: peak throughput in K txn/s with 24 servers, by system (the paper's, by part).
FIG9_KTXN_PER_S = K2_PAPER.fig9_ktxn_per_s
# The ratios the K2 paper's Fig. 9 reads: its system over each baseline (the paper gives the
# first; the second baseline has no column there).
FIG9_RATIOS = ((K2, RAD), (K2, PARIS_STAR))


def fig9_ratio(setting) -> float | None:
    """The paper's K2/RAD at peak in a Fig. 9 setting, or None for a setting it did not run."""
    mine, theirs = FIG9_KTXN_PER_S[K2].get(setting), FIG9_KTXN_PER_S[RAD].get(setting)
    return None if mine is None or theirs is None else mine / theirs


# K2/RAD within these of 1 is a tie, not an order: a run here (one point's throughput varies
# by about 10% between single trials on a 2-core machine), and the paper (its f=3: 53.7
# against 51.9 K txn/s).
TIE_HERE, TIE_PAPER = 0.10, 0.05


def order(ratio: float, tie: float) -> str:
    """K2/RAD as an order: "tie" when either is ahead by less than ``tie`` (0.10: K2/RAD
    between 1/1.1 and 1.1, the same band seen from either side), else who is ahead."""
    if not ratio > 0:
        raise ValueError(f"K2/RAD must be a positive ratio, got {ratio!r}")
    return "tie" if abs(math.log(ratio)) < math.log1p(tie) else "K2 ahead" if ratio > 1 else "RAD ahead"


# The paper's smallest RTT (VA-CA, its Fig. 6): a run is judged against its own topology's
# smallest RTT x rtt_scale (claims.smallest_rtt_of); this one on a real WAN or without it.
SMALLEST_RTT_MS = 60.0

# The paper's default setting (§VII-B) on the four axes its Fig. 8 and 9 vary: the schema's
# defaults (the replication factor's is the topology file's, the paper's 2).
AXES = ("topology.replication_factor", "workload.write_fraction", "workload.zipf", "server.cache_fraction")
DEFAULTS = {a: schema.table()[a.split(".")[0]][a.split(".")[1]][1] for a in AXES} | {"topology.replication_factor": 2}
# Fig. 8a is the read-only workload.
SETTINGS = {**FIG9_SETTINGS, "read-only": {"workload.write_fraction": 0.0}}


def setting_of(config: dict) -> str | None:
    """The paper setting a resolved configuration is (a Fig. 9 column name, "read-only" for
    Fig. 8a, "tao" for the TAO-like mix), or None: another workload, or two changes at once."""
    if isinstance(config["workload"].get("keys_per_op"), dict):
        return "tao"  # the TAO-like mix: keys per read drawn from a distribution

    def value(axis):
        section, name = axis.split(".")
        v = config[section][name]
        return 2 if v is None and axis == "topology.replication_factor" else v

    for name, changes in SETTINGS.items():
        if all(value(a) == v for a, v in (DEFAULTS | changes).items()):
            return name
    return None
