"""A report's notebooks share one kernel (analysis.report.one_kernel) and still behave as if
each had its own: a name another notebook defined is not there, a kernel that dies takes
only its own notebook down, execution counts start at 1, and no kernel outlives the report."""
import os

from analysis import report
from conftest import ROOT

RUN = ROOT / "tests" / "fixtures" / "run-analysis"
KERNELSPEC = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}


def notebook(path, *sources):
    import nbformat  # here, not at the top: its jsonschema takes a second to import in every collection
    from nbformat.v4 import new_code_cell, new_notebook

    cells = [new_code_cell("runs = []\nout_dir = ''", metadata={"tags": ["parameters"]})]
    cells += [new_code_cell(s) for s in sources]
    nbformat.write(new_notebook(cells=cells, metadata=KERNELSPEC), str(path))


def report_of(tmp_path, monkeypatch, notebooks: dict) -> tuple:
    """The report of these notebooks ({name: cells}) on the fixture run, which one of them
    fails; returns its directory and index page."""
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    for name, cells in notebooks.items():
        notebook(nbs / f"{name}.ipynb", *cells)
    monkeypatch.setattr(report, "NOTEBOOKS", nbs)
    out = tmp_path / "report"
    assert report.main([str(RUN), "--out", str(out)]) == 1
    return out, (out / "index.html").read_text()


def test_notebooks_in_one_kernel_start_clean_and_survive_a_dead_one(tmp_path, monkeypatch):
    out, index = report_of(tmp_path, monkeypatch, {
        "01-defines": ["import os\nleftover = 1\nkernel_pid = os.getpid()\nprint(kernel_pid)",
                       "import matplotlib\nmatplotlib.rcParams['lines.linewidth'] = 9.5"],
        # leftover: defined only by 01, so it must fail here as it would on its own; the line
        # width is back to what it was before 01 set it
        "02-uses": ["import os\nprint(os.getpid())",
                    "import matplotlib\nassert matplotlib.rcParams['lines.linewidth'] != 9.5", "leftover"],
        "04-dies": ["import os\nos._exit(1)"],
        "05-after": ["import os\nprint(os.getpid())", "1 + 1"],
    })
    assert "Notebook 02-uses failed (NameError: name &#x27;leftover&#x27; is not defined)" in index, index
    assert "Notebook 04-dies failed" in index
    assert "01-defines failed" not in index
    assert "05-after failed" not in index

    import nbformat

    def executed(stem):
        return nbformat.read(str(out / "notebooks" / f"{stem}.ipynb"), as_version=4)

    def printed(stem):
        [cell] = [c for c in executed(stem).cells if "print(" in c.source]
        return cell.outputs[0]["text"].strip()

    assert printed("01-defines") == printed("02-uses"), "one kernel, not one per notebook"
    assert printed("05-after") != printed("01-defines"), "the dead kernel was replaced"
    counts = [c.execution_count for c in executed("05-after").cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), counts
    assert executed("05-after").cells[-1].outputs[0]["execution_count"] == len(counts)
    for pid in {printed("01-defines"), printed("05-after")}:  # this report's kernels, not another test's
        assert not os.path.exists(f"/proc/{pid}"), f"kernel {pid} outlives the report"


def test_a_kernel_that_cannot_start_fails_each_notebook_not_the_report(tmp_path, monkeypatch):
    from jupyter_client.manager import AsyncKernelManager

    async def refuse(self, **kw):
        raise RuntimeError("no kernel here")

    monkeypatch.setattr(AsyncKernelManager, "start_kernel", refuse)
    _, index = report_of(tmp_path, monkeypatch, {"01-a": ["1"], "02-b": ["2"]})
    assert "Notebook 01-a failed (RuntimeError: no kernel here)" in index, index
    assert "Notebook 02-b failed (RuntimeError: no kernel here)" in index


def test_a_kernel_slow_to_answer_is_waited_for_not_taken_for_dead():
    """On a loaded machine a kernel can miss its heartbeat (1 s) while it is alive: the
    reset's client asks the kernel's process, not the heartbeat. Stopped for 2.5 s here (the
    report's 00-broken notebook failed in make test with "Kernel died before replying to
    kernel_info" and the kernel alive)."""
    import contextlib
    import signal
    import threading

    with report.one_kernel() as kernel:
        km = kernel()
        pid = km.provisioner.process.pid
        resume = threading.Timer(2.5, os.kill, (pid, signal.SIGCONT))
        try:
            os.kill(pid, signal.SIGSTOP)
            resume.start()
            report._reset(km)
        finally:
            resume.cancel()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        assert kernel() is km, "the kernel was alive all along: not replaced"
