import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
JAR = ROOT / "system" / "launcher" / "target" / "k2bench.jar"
SYSTEMS = ["bpr", "cops-pr", "k2", "karma", "nocc", "paris", "paris-star", "rad"]

# Files whose tests run whole clusters of server and client JVMs.
CLUSTER_FILES = {"test_e2e.py", "test_consistency_runs.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in CLUSTER_FILES:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def jar():
    # `make test` builds the jar before the Python tests; a missing jar is a failure, not a skip.
    assert JAR.exists(), f"{JAR} is missing: run `make build` (make test does) first"
    return JAR
