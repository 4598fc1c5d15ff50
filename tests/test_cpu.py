"""CPU accounting from /proc (k2bench/cpu.py): thread categories, per-thread differences over
a window, the sampler, and the hypervisor's steal said in the summary."""
import mmap
import os
import threading
import time

import pytest

from conftest import SYSTEMS
from k2bench import bench, cpu


@pytest.mark.parametrize("name,category", [
    ("srv-3-k2", "server protocol"), ("srv-11-paris-st", "server protocol"), ("srv-11-rad", "server protocol"),
    # the old names (an older jar), which Linux cut to "paris-star-serv" for every PaRiS* server
    ("k2-server-3", "server protocol"), ("paris-star-serv", "server protocol"),
    ("k2b-io-1", "transport (gRPC/Netty)"), ("k2b-accept-1", "transport (gRPC/Netty)"),
    ("grpc-default-ex", "transport (gRPC/Netty)"), ("k2b-wan-0", "WAN dispatchers"),
    ("Thread-12", "client threads (YCSB, workload, history, histograms)"),
    ("GC Thread#0", "GC"), ("G1 Conc#0", "GC"), ("ZWorker#1", "GC"), ("VM Thread", "GC"),
    ("C2 CompilerThre", "JIT"), ("C1 CompilerThre", "JIT"),
    ("k2bench-hlog", cpu.OTHER), ("main", cpu.OTHER), ("k2bench-server-t", cpu.OTHER),
])
def test_thread_names_fall_in_their_category(name, category):
    assert cpu.category(name) == category


def test_a_systems_own_thread_categories_come_from_its_descriptor():
    own = SYSTEMS["bpr"].thread_categories
    assert own, "BPR's blocked reads wait on threads of their own (ParisServer)"
    [(label, _)] = own.items()
    assert cpu.category("k2b-bpr-wait", cpu.rules(own)) == label
    assert cpu.category("k2b-bpr-wait") == cpu.OTHER  # another system's accounting has no such category
    assert cpu.category("srv-3-bpr", cpu.rules(own)) == cpu.PROTOCOL


def _stat(name: str, utime: int, stime: int, nice: int = 0, minflt: int = 0) -> str:
    # pid (comm) state ppid ... : minflt is field 10, utime and stime 14 and 15, nice 19
    rest = ["S", "1"] + ["0"] * 5 + [str(minflt)] + ["0"] * 3 + [str(utime), str(stime)] + ["0"] * 3 + \
        [str(nice)] + ["0"] * 6
    return f"42 ({name}) " + " ".join(rest) + "\n"


def _fake_proc(root, pid, total, threads, minflt=0):
    d = root / str(pid)
    (d / "task").mkdir(parents=True, exist_ok=True)
    (d / "stat").write_text(_stat("java", total, 0, minflt=minflt))
    (d / "status").write_text(f"Name:\tjava\nVmHWM:\t  {pid * 1024 * 10} kB\nVmRSS:\t  {pid * 1024 * 5} kB\n")
    for old in (d / "task").iterdir():
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    for tid, (name, ticks, *rest) in threads.items():
        (d / "task" / str(tid)).mkdir()
        stime = rest[2] if len(rest) > 2 else 0  # of ticks, those in kernel mode
        (d / "task" / str(tid) / "stat").write_text(_stat(name, ticks - stime, stime, *rest[:1]))
        vol, invol = rest[1] if len(rest) > 1 else (0, 0)
        (d / "task" / str(tid) / "status").write_text(
            f"Name:\t{name}\nvoluntary_ctxt_switches:\t{vol}\nnonvoluntary_ctxt_switches:\t{invol}\n")


def test_accounting_counts_differences_new_threads_and_exited_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu, "PROC", tmp_path)
    hz = os.sysconf("SC_CLK_TCK")
    _fake_proc(tmp_path, 10, 1000, {1: ("srv-1-k2", 300), 2: ("k2b-io-1", 200), 3: ("C2 CompilerThre", 100),
                                    6: ("srv-0-k2", 10), 7: ("rad-server-4", 5)}, minflt=1_000)
    _fake_proc(tmp_path, 20, 500, {4: ("Thread-1", 400, 4, (100, 10), 100)}, minflt=70)
    before = cpu.snapshot({"servers": 10, "client-VA": 20, "gone": 99})
    assert set(before) == {"servers", "client-VA"}  # a process that is not there is left out
    # servers: +50 protocol, +30 io; the C2 thread ended (its 100 stay in the total); a new wan thread used 20
    # srv-0's thread was replaced inside the window (a restart): both count for server 0;
    # an old-style name counts as protocol but not per server
    _fake_proc(tmp_path, 10, 1000 + 50 + 30 + 20 + 7 + 4 + 3 + 2, {
        1: ("srv-1-k2", 350), 2: ("k2b-io-1", 230), 5: ("k2b-wan-0", 20), 6: ("srv-0-k2", 14),
        8: ("srv-0-k2", 3), 7: ("rad-server-4", 7)}, minflt=1_000 + 25_600)
    _fake_proc(tmp_path, 20, 500 + 65, {4: ("Thread-1", 460, 4, (130, 15), 120), 9: ("Thread-2", 5, 4, (7, 1), 2)},
               minflt=70 + 3)
    after = cpu.snapshot({"servers": 10, "client-VA": 20})
    machine = ({"user": 100, "nice": 50, "system": 30, "idle": 20, "irq": 0, "steal": 0},
               {"user": 100 + hz, "nice": 50 + 2 * hz, "system": 30 + hz, "idle": 20 + 16 * hz, "irq": 0, "steal": 0})
    acc = cpu.account(before, after, 10.0, {"servers": "servers", "client-VA": "clients"}, machine=machine)
    s, c = acc["roles"]["servers"], acc["roles"]["clients"]
    assert s["server protocol"] == round(59 / hz, 2)
    # and each server's thread on its own, by server id in id order
    assert list(acc["server_threads_s"].items()) == [("0", round(7 / hz, 3)), ("1", round(50 / hz, 3))]
    # and the nice value each category ran at: the client thread below the servers
    assert acc["nice"]["clients"]["client threads (YCSB, workload, history, histograms)"] == [4]
    assert acc["nice"]["servers"]["server protocol"] == [0]
    # context switches in the window: Thread-1's differences, all of Thread-2's (born in it)
    assert acc["switches"]["clients"]["client threads (YCSB, workload, history, histograms)"] == \
        {"voluntary": 30 + 7, "involuntary": 5 + 1}
    # kernel-mode time: Thread-1's difference, all of Thread-2's; none in the servers' threads
    assert acc["kernel_s"]["clients"]["client threads (YCSB, workload, history, histograms)"] == round(22 / hz, 2)
    assert acc["kernel_s"]["servers"]["server protocol"] == 0
    # minor page faults in the window, per role (the servers' heap took 100 MB of new pages)
    assert acc["minor_faults"] == {"clients": 3, "servers": 25_600}
    assert acc["machine_s"] == {"user": 1.0, "nice": 2.0, "system": 1.0, "idle": 16.0, "irq": 0.0, "steal": 0.0}
    assert "machine_s" not in cpu.account(before, after, 10.0, {})  # without the machine's ticks
    assert cpu.steal_share(acc) == 0.0 and cpu.steal_warning(acc) is None
    assert cpu.steal_share(cpu.account(before, after, 10.0, {})) is None
    assert s["transport (gRPC/Netty)"] == round(30 / hz, 2)
    assert s["WAN dispatchers"] == round(20 / hz, 2)
    assert s[cpu.EXITED] == round(7 / hz, 2)  # in the process total, in no live thread
    assert c["client threads (YCSB, workload, history, histograms)"] == round(65 / hz, 2)
    assert acc["cpu_s"] == round((116 + 65) / hz, 2)
    assert cpu.by_category(acc)["server protocol"] == pytest.approx(59 / hz, abs=0.01)
    # resident memory at its peak (VmHWM), per role: pid 10 -> 100 MB, pid 20 -> 200 MB
    assert acc["memory_mb"] == {"clients": {"processes": 1, "peak_rss_mb_max": 200, "peak_rss_mb_sum": 200},
                                "servers": {"processes": 1, "peak_rss_mb_max": 100, "peak_rss_mb_sum": 100}}


def test_a_real_process_is_accounted_by_its_threads():
    stop = threading.Event()

    def spin():
        import ctypes
        ctypes.CDLL(None).prctl(15, b"k2b-wan-9", 0, 0, 0)  # PR_SET_NAME: the kernel's name of this thread
        while not stop.is_set():
            sum(range(1000))

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = cpu.snapshot({"me": os.getpid()})
        fresh = mmap.mmap(-1, 32 << 20)  # 32 MB never touched: each page faults in when written
        for off in range(0, len(fresh), 4096):
            fresh[off] = 1
        time.sleep(0.5)
        after = cpu.snapshot({"me": os.getpid()})
        fresh.close()
    finally:
        stop.set()
        t.join()
    acc = cpu.account(before, after, 0.5, {"me": "servers"})
    assert acc["cpu_s"] > 0.1
    assert acc["roles"]["servers"]["WAN dispatchers"] > 0.1  # found by the name the thread runs under
    assert acc["memory_mb"]["servers"]["peak_rss_mb_max"] > 10  # this Python process, resident
    assert acc["minor_faults"]["servers"] >= 16  # 8,192 pages of 4 KB, or 16 huge pages of 2 MB
    m = cpu.machine_ticks()  # the real /proc/stat: every state, none negative
    assert set(m) == {"user", "nice", "system", "idle", "irq", "steal"} and min(m.values()) >= 0
    assert sum(m.values()) > 0


def test_the_sampler_gives_nothing_when_the_window_did_not_close():
    s = cpu.WindowSampler({"me": os.getpid()}, time.time() - 1, time.time() + 60)
    time.sleep(0.2)
    assert s.result({"me": "servers"}) is None


def test_a_window_the_hypervisor_took_from_is_said_in_the_summary_warnings():
    """A run's end table (its summary's warnings) names steal above the limit, so a degraded
    emulation in that window is read as the host's; at the limit nothing is said."""
    def acc(steal):
        return {"machine_s": {"user": 10.0, "idle": 10.0 - steal, "steal": steal}}
    assert cpu.steal_warning(acc(0.4)) is None  # 2.0%: at the limit
    warning = cpu.steal_warning(acc(1.5))
    assert warning.startswith(cpu.STOLEN) and "7.5%" in warning and "limit 2%" in warning
    assert bench.steal_share({"cpu": acc(1.5)}) == pytest.approx(0.075)
