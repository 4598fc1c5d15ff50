import pathlib
import signal

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
# Files of CPU work with no bound on time under a minute (the notebooks, the figures): marked idle, run by
# make test at the lowest priority beside the alone cluster runs (Makefile, PY_IDLE).
IDLE_FILES = {"test_analysis.py"}
# The order the cluster phase hands tests out in (make test: pytest -n 3 --dist load): the
# longest first (the scaffold's build, run and report, then a placement table's runs, the
# end-to-end runs, then the stress runs, 20-35 s each on a loaded machine) and the tests that
# start nothing or stop before a cluster is up last, so that no worker starts a long one
# while the others run out of work. test_table_placement marks its one cluster test itself.
HANDED_OUT_FIRST = ["test_scaffold_e2e.py", "test_table_placement.py", "test_e2e.py", "test_consistency_runs.py"]
HANDED_OUT_LAST = ("test_bad_input_stops_with_one_line_before_anything_starts",
                   "test_an_unknown_experiment_lists_the_known_ones",
                   "test_every_mutant_the_systems_honour_is_caught_here_or_by_a_java_test")


def pytest_configure(config):
    # make test stops its background tests with TERM (a background job ignores Ctrl-C):
    # handled as a Ctrl-C, the fixtures' teardown stops the servers and kernels they started
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in CLUSTER_FILES:
            item.add_marker(pytest.mark.cluster)
        if item.path.name in IDLE_FILES:
            item.add_marker(pytest.mark.idle)
    rank = {name: i for i, name in enumerate(HANDED_OUT_FIRST)}
    # stable: a file's own order stays
    items.sort(key=lambda item: (item.originalname in HANDED_OUT_LAST, rank.get(item.path.name, len(rank))))


# The first lines of every stand-in process (a small Python program playing a server or a
# client) a test starts: it exits once the test process that started it is gone, so a pytest
# killed before its teardown leaves none running (they idled on, stealing CPU from later runs).
ORPHAN_GUARD = """\
import os, threading, time
def _orphan_guard(parent=os.getppid()):
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(3)
threading.Thread(target=_orphan_guard, daemon=True).start()
"""


@pytest.fixture(scope="session")
def jar():
    # `make test` builds the jar before the Python tests; a missing jar is a failure, not a skip.
    assert JAR.exists(), f"{JAR} is missing: run `make build` (make test does) first"
    return JAR
