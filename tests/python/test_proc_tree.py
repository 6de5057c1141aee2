"""scripts/proc_tree.py, the benchmarks' memory figure for multi-process oracles (msprof-analyze):
the watcher must see every process of a tree, count their memory together, and leave itself out."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from proc_tree import Watcher  # noqa: E402


def test_watcher_sums_a_tree_of_workers():
    worker = "import sys, time\nblock = bytearray(40 << 20)\ntime.sleep(0.8)\n"
    parent = ("import subprocess, sys\n"
              f"kids = [subprocess.Popen([sys.executable, '-c', {worker!r}]) for _ in range(2)]\n"
              "for k in kids: k.wait()\n")
    proc = subprocess.Popen([sys.executable, "-c", parent])
    with Watcher(proc.pid) as w:
        assert proc.wait(timeout=60) == 0
        peak = w.stop()
    assert peak["tree_processes"] == 3  # the parent and both workers; never the watcher itself
    # Two workers' 40 MiB each are private: the sum holds both, whatever the interpreter shares.
    assert peak["tree_peak_pss_mib"] >= 80
    assert peak["tree_peak_rss_mib"] >= peak["tree_peak_pss_mib"]


def test_watcher_of_one_process():
    proc = subprocess.Popen([sys.executable, "-c", "import time\nb = bytearray(30 << 20)\ntime.sleep(0.5)\n"])
    with Watcher(proc.pid) as w:
        proc.wait(timeout=60)
        peak = w.stop()
    assert peak["tree_processes"] == 1
    assert 30 <= peak["tree_peak_pss_mib"] < 80


def test_watcher_of_its_own_parent_leaves_itself_out():
    # hta_check.py watches its own process (HTA loads in-process); the watcher is then its child.
    with Watcher(os.getpid()) as w:
        block = bytearray(20 << 20)  # noqa: F841
        import time
        time.sleep(0.3)
        peak = w.stop()
    assert peak["tree_processes"] == 1
