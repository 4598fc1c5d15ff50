"""The bundled systems as the harness knows them: what each system's own module publishes
through ``k2bench.jar systems --json`` (its ``StoreSystem``'s descriptor). Nothing else in
Python names a system: labels, colours, order, capabilities and mutants come from here, so
adding a system is its Java module and nothing more.

A run records the descriptors of its systems in its manifest (``systems_info``), so a
run's readers label and colour it as it was run, jar or no jar."""
from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

# Figures' colours for a system whose descriptor names none (matplotlib's tab10 without the
# grey, which reads as "missing"), taken in turn by the systems without one.
DEFAULT_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
                   "#17becf")


@dataclass(frozen=True)
class SystemInfo:
    """One system's descriptor. A key an older jar does not publish takes the default here,
    which is StoreSystem's default for it."""
    name: str
    description: str = ""
    label: str = ""  # how tables and figures name it; empty: its name
    colour: str | None = None  # "#rrggbb" in figures; None: one of DEFAULT_COLOURS
    order: int = 1000  # place in tables and figures, smaller first
    paper: str | None = None  # the short id of the paper whose evaluation it belongs to
    run_by_default: bool = False  # run by an experiment file that names no systems
    max_wan_rounds: int | None = None  # the checker holds a ROT to it; None: no claim
    not_own: Mapping[str, str] = field(default_factory=dict)  # op -> why its measurement is not the system's
    options: tuple = ()  # its own options (server.options.<system>): name, type, default, bounds
    read_write_transactions: bool = False
    write_only_transactions: bool = True
    message_loss: bool = True  # experiments may drop its messages
    placements: tuple[str, ...] = ("groups",)
    dc_cache: bool = False  # a datacenter cache serves reads of keys the datacenter does not replicate
    client_second_round: bool = False  # the client runs a read-only transaction's second round itself
    causal: bool = True  # claims causal consistency: a violation is a bug, not the design
    thread_categories: Mapping[str, str] = field(default_factory=dict)  # CPU category -> thread-name regex
    mutants: Mapping[str, str] = field(default_factory=dict)  # broken variants it honours: name -> what

    @property
    def shown(self) -> str:
        return self.label or self.name

    @classmethod
    def from_json(cls, d: Mapping) -> SystemInfo:
        known = {f.name for f in fields(cls)}
        v = {k: x for k, x in d.items() if k in known}
        for k in ("options", "placements"):
            if k in v:
                v[k] = tuple(v[k])
        if isinstance(v.get("mutants"), list):
            v["mutants"] = {m["name"]: m.get("description", "") for m in v["mutants"]}
        return cls(**v)

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["options"], out["placements"] = list(self.options), list(self.placements)
        out["mutants"] = [{"name": k, "description": d} for k, d in sorted(self.mutants.items())]
        return out


class Systems(Mapping[str, SystemInfo]):
    """Systems by name, in their order (``order``, then name). An unknown name is still
    labelled and coloured (its name, a default colour), so a run of a system this jar does
    not have can be read."""

    def __init__(self, infos: Iterable[SystemInfo] = (), *, loader: Callable[[], Iterable[SystemInfo]] | None = None):
        """``loader``: where the descriptors come from, asked on first use instead."""
        self._loader, self._loaded = loader, None
        self._assigned: dict[str, str] = {}  # default colours given so far, in the order asked
        if loader is None:
            self._loaded = self._ordered(infos)

    @staticmethod
    def _ordered(infos: Iterable[SystemInfo]) -> dict[str, SystemInfo]:
        return {s.name: s for s in sorted(infos, key=lambda s: (s.order, s.name))}

    @property
    def _by(self) -> dict[str, SystemInfo]:
        if self._loaded is None:
            self._loaded = self._ordered(self._loader())
        return self._loaded

    def __getitem__(self, name: str) -> SystemInfo:
        return self._by[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by)

    def __len__(self) -> int:
        return len(self._by)

    def __repr__(self) -> str:
        return f"Systems({', '.join(self._by)})"

    @classmethod
    def from_json(cls, items: Iterable[Mapping]) -> Systems:
        return cls(SystemInfo.from_json(d) for d in items)

    def to_json(self, names: Iterable[str] | None = None) -> list[dict]:
        return [self._by[n].to_json() for n in (self._by if names is None else names) if n in self._by]

    def merged(self, other: Systems) -> Systems:
        """These and ``other``'s, other's descriptor winning for a name in both."""
        return Systems({**self._by, **other._by}.values())

    def info(self, name: str) -> SystemInfo:
        return self._by.get(name) or SystemInfo(name)

    def label(self, name: str) -> str:
        return self.info(name).shown

    def colour(self, name: str) -> str:
        """Its descriptor's colour; a system without one (or without a descriptor) gets the
        next of DEFAULT_COLOURS no system has, the first time it is asked for, and keeps it."""
        own = self.info(name).colour
        if own:
            return own
        if name not in self._assigned:
            taken = {s.colour for s in self._by.values() if s.colour} | set(self._assigned.values())
            free = [c for c in DEFAULT_COLOURS if c not in taken]
            self._assigned[name] = free[0] if free else DEFAULT_COLOURS[len(self._assigned) % len(DEFAULT_COLOURS)]
        return self._assigned[name]

    def palette(self, names: Iterable[str]) -> dict[str, str]:
        """Label -> colour for these systems (what seaborn's ``palette`` takes)."""
        return {self.label(n): self.colour(n) for n in names}

    def ordered(self, names: Iterable[str]) -> list[str]:
        """These names in the systems' order, unknown ones after, by name."""
        names = set(names)
        return [n for n in self._by if n in names] + sorted(n for n in names if n not in self._by)

    def by_label(self, labels: Iterable[str]) -> list[str]:
        """Labels in the systems' order (labels of unknown systems after, as given)."""
        labels = list(dict.fromkeys(labels))
        known = [s.shown for s in self._by.values() if s.shown in labels]
        return known + [x for x in labels if x not in known]

    def defaults(self) -> list[str]:
        """What an experiment file that names no systems runs."""
        return [n for n, s in self._by.items() if s.run_by_default]

    def where(self, **capabilities) -> list[str]:
        """The systems whose descriptor has these values, e.g. ``where(dc_cache=True)``."""
        return [n for n, s in self._by.items() if all(getattr(s, k) == v for k, v in capabilities.items())]

    def of_paper(self, paper: str) -> list[str]:
        return [n for n, s in self._by.items() if s.paper == paper]

    def mutants(self) -> dict[str, list[str]]:
        """Every mutant the systems honour, and which systems honour it."""
        out: dict[str, list[str]] = {}
        for n, s in self._by.items():
            for m in s.mutants:
                out.setdefault(m, []).append(n)
        return dict(sorted(out.items()))


def class_archive(jar: Path) -> Path | None:
    """The jar's class-data archive, which `make build` dumps beside it, or None."""
    archive = jar.with_suffix(".jsa")
    return archive if archive.exists() else None


def quick_launcher(jar: Path, java: str = "java") -> list[str]:
    """The launcher for a command that answers within a second (systems, topology): C1 only,
    the serial collector and the jar's class-data archive where `make build` dumped one,
    half the CPU of a default JVM's start (``systems --json`` 0.64 -> 0.29 CPU s), which
    every `k2bench run` pays twice. The JVM's own messages go to stderr only (by default its
    warnings, e.g. that it cannot use an archive dumped for another jar, also go to stdout,
    which is the answer)."""
    archive = class_archive(jar)
    return [java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xlog:disable", "-Xlog:all=warning:stderr",
            *([f"-XX:SharedArchiveFile={archive}"] if archive else []), "-jar", str(jar)]


def from_jar(jar: Path, java: str = "java", timeout: float = 120) -> Systems:
    """The systems a jar bundles (``systems --json``); RuntimeError with the launcher's last
    line if it fails."""
    p = subprocess.run([*quick_launcher(jar, java), "systems", "--json"], capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError((p.stderr.strip().splitlines() or [f"{jar} systems --json failed"])[-1])
    return Systems.from_json(json.loads(p.stdout))


_LOCAL: dict[tuple, Systems] = {}


def local(jar: Path | None = None) -> Systems:
    """The systems of this checkout's jar, asked once per process and jar version; none when
    the jar is not built (readers of runs then use the runs' own descriptors)."""
    jar = jar or Path(__file__).resolve().parent.parent / "system" / "launcher" / "target" / "k2bench.jar"
    try:
        key = (str(jar), jar.stat().st_mtime_ns)
    except OSError:
        return Systems()
    if key not in _LOCAL:
        try:
            _LOCAL[key] = from_jar(jar)
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired):
            _LOCAL[key] = Systems()
    return _LOCAL[key]


def of_run(run_dir: Path) -> Systems:
    """The systems as a run was made with them (its manifest's ``systems_info``), over this
    checkout's jar's for runs made before manifests recorded them."""
    try:
        saved = json.loads((Path(run_dir) / "manifest.json").read_text()).get("systems_info") or []
    except (OSError, ValueError):
        saved = []
    return local().merged(Systems.from_json(saved))
