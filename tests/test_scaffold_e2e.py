"""A system made by `make new-system` works from its first build: on a copy of this checkout
(its uncommitted files too), the scaffold, an offline build of the jar with the new module
(running three cases of the module's generated contract test), the jar listing it, a tiny
experiment on it through the CLI with zero violations in the end table, and the report's
overview showing it. Each step's time is printed (pytest -s shows them)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import yaml

from conftest import ROOT

NAME, CLS = "demo-sys", "DemoSys"


def copy_checkout(dst):
    """The files git would have in a commit of the working tree: tracked and untracked, not ignored."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for f in filter(None, listed):
        if os.path.lexists(ROOT / f):  # a tracked file deleted in the working tree is not copied
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dst / f, follow_symlinks=False)


def run(args, cwd, env, timeout):
    """A command in a session of its own, so that a timeout stops its children (JVMs) too."""
    p = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{args[:4]} took over {timeout} s:\n{out[-2000:]}\n{err[-2000:]}") from None
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def processes_mentioning(text):
    out = []
    for d in os.scandir("/proc"):
        if d.name.isdigit():
            try:
                with open(f"/proc/{d.name}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        out.append(int(d.name))
            except OSError:
                pass
    return [p for p in out if p != os.getpid()]


def test_a_generated_system_builds_runs_and_shows_in_the_end_table_and_the_report(tmp_path):
    started = time.time()

    def step(what):
        print(f"[{time.time() - started:4.0f} s] {what}", flush=True)

    repo = tmp_path / "repo"
    copy_checkout(repo)
    env = {**os.environ, "PYTHONPATH": str(repo), "COLUMNS": "200"}  # the copy's k2bench; an unwrapped table
    step(f"copied the checkout to {repo}")

    # Through the Makefile target, with a stand-in for .venv: this Python, nothing to install.
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".installed").touch()
    r = run(["make", "--no-print-directory", f"VENV={venv}", "new-system", f"NAME={NAME}"], repo, env, 120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"system/{NAME}/src/main/java/org/k2bench/demosys/{CLS}System.java" in r.stdout
    step(f"make new-system NAME={NAME}")

    # The jar offline, with the new module's contract test as the only test run. Only the new
    # module and the launcher are built: the others are this checkout's, which the jar fixture's
    # build installed (the copy has the same sources), so compiling them again tests nothing.
    # Three of the contract's cases: that the generated test builds, starts its cluster and
    # passes; the whole contract of the protocol it delegates to runs in that protocol's module.
    r = run(["mvn", "-B", "-q", "-o", "-f", "system/pom.xml", "-pl", f"{NAME},launcher", "package",
             f"-Dtest={CLS}ContractTest#aWriteOutranks*", "-Dsurefire.failIfNoSpecifiedTests=false"],
            repo, env, 1800)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    reports = list((repo / "system" / NAME / "target" / "surefire-reports").glob(f"*{CLS}ContractTest.txt"))
    tests = re.search(r"Tests run: 3, Failures: 0, Errors: 0, Skipped: 0[^\n]*",
                      reports[0].read_text() if reports else "")
    assert tests, "its contract test ran and passed"
    jar = repo / "system" / "launcher" / "target" / "k2bench.jar"
    with zipfile.ZipFile(jar) as z:
        assert f"org/k2bench/demosys/{CLS}System.class" in z.namelist()
        services = z.read("META-INF/services/org.k2bench.core.api.StoreSystem").decode().split()
        assert f"org.k2bench.demosys.{CLS}System" in services, services
    step(f"built {jar.relative_to(repo)}; {CLS}ContractTest: {tests.group(0)}")

    r = run(["java", "-jar", str(jar), "systems", "--json"], repo, env, 120)
    assert r.returncode == 0, r.stderr
    [info] = [s for s in json.loads(r.stdout) if s["name"] == NAME]
    assert (info["label"], info["order"], info["paper"]) == (NAME, 100, None)
    assert info["message_loss"] is False, "the protocol's facts follow the protocol it delegates to"
    step("systems --json lists it")

    exp = yaml.safe_load((ROOT / "tests" / "fixtures" / "tiny.yaml").read_text())
    exp["systems"] = [NAME]
    exp["server"].pop("processes")  # one JVM: the system, not the gRPC path, is the point here
    exp["duration"] = {"warmup_s": 1, "measure_s": 2, "cooldown_s": 0.5}
    experiment, runs = tmp_path / "demo.yaml", tmp_path / "runs"
    experiment.write_text(yaml.safe_dump(exp))
    r = run([sys.executable, "-m", "k2bench.cli", "--jar", str(jar), "run", str(experiment), "--runs", str(runs)],
            repo, env, 900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    table = r.stdout[r.stdout.index("summary (latencies in ms)"):]
    print(table, flush=True)
    assert re.search(rf"┃\s*┃\s*{NAME}\s*┃", table), table
    assert re.search(r"consistency violations\s*│\s*0 of [1-9]\d* ops", table), table
    run_dir = (runs / "latest").resolve()
    summary = json.loads((run_dir / NAME / "summary.json").read_text())
    assert summary["ops"]["rot"]["count"] > 0 and summary["errors"] == 0
    assert processes_mentioning(str(run_dir)) == [], "no process of the run is left"
    step(f"k2bench run: {summary['ops']['rot']['count']} ROTs, "
         f"{summary['consistency']['checked_ops']} operations checked, 0 violations")

    # the overview is the page that lists every system; test_analysis runs every notebook
    r = run([sys.executable, "-m", "analysis.report", str(run_dir), "--notebooks", "overview"], repo, env, 1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = run_dir / "report"
    assert NAME in (report / "index.html").read_text()
    overview = (report / "data" / "overview.csv").read_text()
    assert NAME in overview, overview[:2000]
    step("analysis.report: index.html and data/overview.csv show it")
