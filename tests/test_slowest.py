import os

import slowest


def _xml(path, cases):
    path.write_text("<testsuite>" + "".join(
        f'<testcase classname="{c}" name="{n}" time="{t}"/>' for c, n, t in cases) + "</testsuite>")
    return path


def test_the_slowest_are_printed_slowest_first_and_old_reports_are_left_out(tmp_path, capsys):
    start = tmp_path / ".start"
    start.touch()
    old = _xml(tmp_path / "old.xml", [("tests.test_old", "test_stale", 999.0)])
    os.utime(old, (start.stat().st_mtime - 60, start.stat().st_mtime - 60))
    a = _xml(tmp_path / "a.xml", [("tests.test_a", "test_fast", 0.2), ("tests.test_a", "test_slow", 41.5)])
    b = _xml(tmp_path / "b.xml", [(f"tests.test_b", f"test_{i}", float(i)) for i in range(12)])
    java = tmp_path / "system" / "core" / "target" / "surefire-reports"
    java.mkdir(parents=True)
    _xml(java / "TEST-org.k2bench.core.XTest.xml", [("org.k2bench.core.XTest", "aClusterRun", 30.0)])
    assert slowest.main(["--system", str(tmp_path / "system"), "--since", str(start), str(old), str(a), str(b), str(tmp_path / "missing.xml")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("the 10 slowest of 15 tests")
    assert "tests.test_a.test_slow" in out[1] and "41.5 s" in out[1]
    assert "org.k2bench.core.XTest.aClusterRun" in out[2]
    assert "tests.test_b.test_11" in out[3] and "tests.test_b.test_4" in out[10]
    assert len(out) == 11 and not any("stale" in ln for ln in out)


def test_a_report_that_is_not_xml_is_named_and_left_out(tmp_path, capsys):
    start = tmp_path / ".start"
    start.touch()
    bad = tmp_path / "bad.xml"
    bad.write_text("<testsuite>")
    assert slowest.main(["--system", str(tmp_path), "--since", str(start), str(bad)]) == 0
    cap = capsys.readouterr()
    assert "bad.xml is not JUnit XML" in cap.err and "no test reports" in cap.out
