import pathlib

import pytest

from k2bench.systems import Systems, from_jar

ROOT = pathlib.Path(__file__).resolve().parent.parent
JAR = ROOT / "system" / "launcher" / "target" / "k2bench.jar"


def _jar_systems():
    assert JAR.exists(), f"{JAR} is missing: run `make build` (make test does) first"
    return from_jar(JAR).values()


# The one list of systems every test reads: the jar's descriptors (``systems --json``),
# asked on first use (collecting the tests needs no jar).
SYSTEMS = Systems(loader=_jar_systems)

# Files whose tests run whole clusters of server and client JVMs.
CLUSTER_FILES = {"test_e2e.py", "test_consistency_runs.py", "test_scaffold_e2e.py"}
# The order the cluster phase hands tests out in (make test: pytest -n 3 --dist load): the
# longest first (the scaffold's build and run ~65 s, then the stress runs ~20-30 s each), so
# that no worker starts a long one while the others run out of work. test_table_placement
# marks its one cluster test itself.
HANDED_OUT_FIRST = ["test_scaffold_e2e.py", "test_consistency_runs.py", "test_table_placement.py", "test_e2e.py"]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in CLUSTER_FILES:
            item.add_marker(pytest.mark.cluster)
    rank = {name: i for i, name in enumerate(HANDED_OUT_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order stays


@pytest.fixture(scope="session")
def jar():
    # `make test` builds the jar before the Python tests; a missing jar is a failure, not a skip.
    assert JAR.exists(), f"{JAR} is missing: run `make build` (make test does) first"
    return JAR
