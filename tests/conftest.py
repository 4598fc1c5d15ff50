import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
JAR = ROOT / "system" / "launcher" / "target" / "k2bench.jar"
SYSTEMS = ["k2", "paris-star", "rad"]


@pytest.fixture(scope="session")
def jar():
    # `make test` builds the jar before the Python tests; a missing jar is a failure, not a skip.
    assert JAR.exists(), f"{JAR} is missing: run `make build` (make test does) first"
    return JAR
