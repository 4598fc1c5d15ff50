"""The K2 paper's reference figures (K2 paper §VII): sanity checks to put next
to a run, not targets to tune to."""
from __future__ import annotations

# Fig. 9: peak throughput in K txn/s with 24 servers, the default setting and one
# parameter changed at a time.
FIG9_KTXN_PER_S = {
    "k2": {"default": 41.6, "f=1": 21.1, "f=3": 53.7, "write 0.1%": 47.7, "write 5%": 26.0,
           "zipf 0.9": 21.3, "zipf 1.4": 46.3, "cache 1%": 30.9, "cache 15%": 44.3},
    "rad": {"default": 24.8, "f=1": 11.7, "f=3": 51.9, "write 0.1%": 59.0, "write 5%": 20.2,
            "zipf 0.9": 85.4, "zipf 1.4": 14.8, "cache 1%": 24.8, "cache 15%": 24.8},
}

# The setting of each Fig. 9 column as experiment-file values (the paper's defaults elsewhere).
FIG9_SETTINGS = {
    "default": {},
    "f=1": {"topology.replication_factor": 1}, "f=3": {"topology.replication_factor": 3},
    "write 0.1%": {"workload.write_fraction": 0.001}, "write 5%": {"workload.write_fraction": 0.05},
    "zipf 0.9": {"workload.zipf": 0.9}, "zipf 1.4": {"workload.zipf": 1.4},
    "cache 1%": {"server.cache_fraction": 0.01}, "cache 15%": {"server.cache_fraction": 0.15},
}

# The paper's §VII, default workload unless said otherwise. Each: what, paper value, how to check.
REFERENCE = [
    ("K2 all-local ROTs", "19-83% by workload (73% TAO-like)"),
    ("RAD ROT p1", "> 60 ms (>99% of ROTs remote)"),
    ("PaRiS* all-local ROTs", "< 6%"),
    ("K2 ROT mean below RAD", "140-297 ms"),
    ("K2 ROT mean below PaRiS*", "53-165 ms"),
    ("RAD ROTs with 2 rounds (high skew, 5% writes, f=1)", "91-98%"),
    ("K2 WOT p99", "23 ms"),
    ("RAD single-write p50", "147 ms"),
    ("RAD WOT p50", "201 ms"),
    ("K2 staleness", "p50 0 ms, p75 <= 105 ms, p99 516-1117 ms"),
    ("Throughput (K txn/s, 24 servers)", "K2 41.6 vs RAD 24.8"),
]

SMALLEST_RTT_MS = 60.0
