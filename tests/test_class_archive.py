"""The jar's class-data archive (Makefile: $(JSA)): local JVMs get it when it is there, and the
one `make build` dumps is one the JVMs of a run can map."""
import subprocess

from k2bench.deploy.hosts import LocalHost
from k2bench.trial.jvm import java, ycsb


def test_local_jvms_map_the_archive_beside_the_jar_only_when_there_is_one(tmp_path):
    jar = tmp_path / "k2bench.jar"
    jar.touch()
    host = LocalHost(jar)
    for argv in (java(host, 256, "serve", jvm_args=[]), ycsb(host, 256, "-t", jvm_args=[])):
        assert not [a for a in argv if "SharedArchiveFile" in a], argv
    (tmp_path / "k2bench.jsa").touch()
    for argv in (java(host, 256, "serve", jvm_args=["-XX:TieredStopAtLevel=1"]), ycsb(host, 256, "-t", jvm_args=[])):
        flag = f"-XX:SharedArchiveFile={tmp_path / 'k2bench.jsa'}"
        assert argv.count(flag) == 1 and argv.index(flag) < argv.index("-Xmx256m"), argv


def test_the_archive_make_build_dumps_serves_the_jar_as_runs_name_it(jar):
    archive = jar.with_suffix(".jsa")
    assert archive.exists(), f"{archive} is missing: `make build` (make test does) dumps it"
    # -Xshare:on makes an archive the JVM cannot use (another jar, a relative path) an error
    # instead of the silent fallback every run's JVM has
    r = subprocess.run(["java", "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-XX:TieredStopAtLevel=1",
                        "-jar", str(jar), "systems", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and '"name":"k2"' in r.stdout.replace(" ", ""), r.stderr[-2000:]


def test_a_quick_launcher_command_maps_the_archive_and_keeps_stdout_its_answer(jar, tmp_path):
    """Input checks (systems, topology) start a quick JVM: C1, the serial collector and the
    archive. An archive it cannot use (dumped for another jar, as here for a copy) makes the
    JVM warn; the warning goes to stderr, so the answer on stdout still parses."""
    from k2bench.systems import from_jar, quick_launcher

    archive = jar.with_suffix(".jsa")
    assert archive.exists(), f"{archive} is missing: `make build` (make test does) dumps it"
    argv = quick_launcher(jar)
    assert f"-XX:SharedArchiveFile={archive}" in argv and "-XX:TieredStopAtLevel=1" in argv
    # the archive (dumped under the default collector) maps under these flags: -Xshare:on fails if not
    r = subprocess.run([argv[0], "-Xshare:on", *argv[1:], "systems", "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    copy = tmp_path / "k2bench.jar"
    copy.write_bytes(jar.read_bytes())
    (tmp_path / "k2bench.jsa").write_bytes(archive.read_bytes())
    r = subprocess.run([*quick_launcher(copy), "systems", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Unable to use shared archive" in r.stderr, r.stderr[-2000:]
    assert r.stdout.startswith("[{"), r.stdout[:200]
    assert "k2" in list(from_jar(copy))
