"""Where things are: the repository, the local jar and Java binary (to check inputs), and
the deployment whose hosts run the processes."""
from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .deploy import Deployment
from .errors import ConfigError
from .systems import Systems, quick_launcher


@dataclass
class Env:
    """Where things are: the repository, the local jar and Java binary (to check inputs),
    and the deployment whose hosts run the processes."""
    repo: Path
    jar: Path
    deployment: Deployment
    java: str = "java"
    # Topologies the launcher resolved, by their document: validation and the run ask once.
    topologies: dict = field(default_factory=dict, repr=False)
    # Placement tables topology.place computed (placed_table), by their inputs' hash.
    placed: dict = field(default_factory=dict, repr=False)

    @property
    def place_dir(self) -> Path:
        return self.repo / "runs" / ".placements"

    @property
    def workloads(self) -> Path:
        return self.repo / "workloads"

    def launcher(self, *args: str) -> list[str]:
        """A launcher command on this machine with the JVM's defaults (the echo benchmark;
        input checks take check_output's quicker JVM)."""
        return [self.java, "-jar", str(self.jar), *args]

    def check_output(self, *args: str) -> str:
        """Runs a short launcher command; a ConfigError carries its one-line complaint."""
        if not self.jar.exists():
            raise ConfigError("jar", f"{self.jar} is missing; run `make build`")
        p = subprocess.run([*quick_launcher(self.jar, self.java), *args], capture_output=True, text=True,
                           timeout=120)
        if p.returncode != 0:
            line = (p.stderr.strip().splitlines() or ["failed"])[-1]
            raise ConfigError(line.split(": ", 2)[1] if line.count(": ") >= 2 else "launcher",
                              line.split(": ", 2)[-1])
        return p.stdout

    def systems(self) -> Systems:
        return self.system_info

    @functools.cached_property
    def system_info(self) -> Systems:
        """The bundled systems by name, each with its descriptor (k2bench/systems.py)."""
        return Systems.from_json(json.loads(self.check_output("systems", "--json")))
