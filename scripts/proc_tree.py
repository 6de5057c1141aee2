#!/usr/bin/env python3
"""Peak memory of a whole process tree, for the benchmarks' oracles (bench/bench_analyze.cpp).

`ru_maxrss` gives one process's peak; msprof-analyze runs its work in several
multiprocessing workers at once, so its memory is the sum over its processes. This watcher
samples, every `--interval` seconds (default 0.02), every process under `--pid` (itself
included) and keeps the largest sums of their RSS and of their PSS (proportional set size:
a page shared by k processes counts 1/k, so pages the tool's processes share are not counted
twice). Both are lower bounds of the true peaks (a spike between samples is missed).

    python3 scripts/proc_tree.py --pid PID
runs until its standard input is closed, then prints
    {"tree_peak_rss_mib": …, "tree_peak_pss_mib": …, "tree_processes": …}
(`tree_processes`: the most processes seen at once). Linux only (/proc/PID/smaps_rollup).
It is a process of its own so that its CPU is never counted in the watched tool's.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time


def _children():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # ended meanwhile
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _tree(root):
    """`root` and its descendants, without this watcher (a child of the process it watches)."""
    kids, pids, i = _children(), [root], 0
    while i < len(pids):
        pids += [k for k in kids.get(pids[i], []) if k != os.getpid()]
        i += 1
    return pids


def _rss_pss_kib(pid):
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass  # ended meanwhile
    return rss, pss


def watch(pid, interval, stop):
    peak = {"tree_peak_rss_mib": 0.0, "tree_peak_pss_mib": 0.0, "tree_processes": 0}
    while not stop.is_set():
        pids = _tree(pid)
        sizes = [_rss_pss_kib(p) for p in pids]
        peak["tree_peak_rss_mib"] = max(peak["tree_peak_rss_mib"], sum(r for r, _ in sizes) / 1024.0)
        peak["tree_peak_pss_mib"] = max(peak["tree_peak_pss_mib"], sum(p for _, p in sizes) / 1024.0)
        peak["tree_processes"] = max(peak["tree_processes"], len(pids))
        stop.wait(interval)
    return peak


class Watcher:
    """`with Watcher(pid) as w: …` then `w.peak`: the watcher process around a block of work."""

    def __init__(self, pid):
        self.pid, self.peak = pid, None

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--pid", str(self.pid)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return self

    def stop(self):
        """Ends the watcher and reads its figures; call it after reading the tool's own rusage
        (RUSAGE_CHILDREN grows by the watcher's CPU once it is reaped)."""
        if self.peak is None:
            out, _ = self.proc.communicate(timeout=60)
            self.peak = json.loads(out)
        return self.peak

    def __exit__(self, *exc):
        if self.peak is None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--interval", type=float, default=0.02)
    args = ap.parse_args()
    stop = threading.Event()
    result = {}
    t = threading.Thread(target=lambda: result.update(watch(args.pid, args.interval, stop)), daemon=True)
    t.start()
    sys.stdin.read()  # until the caller closes our input
    stop.set()
    t.join()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
