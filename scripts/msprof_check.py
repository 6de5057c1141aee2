#!/usr/bin/env python3
"""Compare ppstream's device-step columns with msprof-analyze (the Ascend vendor tool) on a
profile directory (a directory of `*_ascend_pt` / `*_ascend_ms` rank directories).

msprof-analyze is a check-time tool only (never a project dependency): the script creates its
own venv (--venv, default ~/.cache/ppstream/msprof-venv), installs `msprof-analyze` from PyPI
there, runs
    msprof-analyze cluster -d DIR -m all -o TMP
and prints its cluster_step_trace_time.csv columns beside ours (`ppstream analyze DIR --json`,
the per-step `device-step columns`, docs/analyze.md), per step and rank:
    python3 scripts/msprof_check.py tests/data/ascend/msinsight-level0 --ppstream build/ppstream
Exit status 1 when a column differs by more than 1 %.
`--bench DIR` instead runs msprof-analyze once and prints {"seconds", "cpu_seconds", "peak_rss_mib",
"tree_peak_rss_mib", "tree_peak_pss_mib", "tree_processes"} as JSON: peak RSS of its largest process, and
the sampled peaks of all its processes together (it runs multiprocessing workers; scripts/proc_tree.py).
"""
import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from proc_tree import Watcher

TOLERANCE = 0.01
# The producer's column → our per-rank key in the step rows of `analyze --json`.
COLUMNS = [
    ("Computing", "compute_ms"),
    ("Communication", "comm_ms"),
    ("Overlapped", "overlapped_ms"),
    ("Communication(Not Overlapped)", "comm_not_overlapped_ms"),
    ("Free", "free_ms"),
    ("Stage", "device_step_ms"),
    ("Preparing", "preparing_ms"),
]


def tool(venv):
    exe = os.path.join(venv, "bin", "msprof-analyze")
    if not os.path.exists(exe):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "msprof-analyze"],
                       check=True)
    return exe


def run_msprof(exe, profile, out):
    """Runs msprof-analyze on a copy-free path; returns (wall s, CPU s of its processes, the largest peak RSS
    of one of its processes in MiB, the sampled peaks of all its processes together: proc_tree.py)."""
    start = time.perf_counter()
    tool_proc = subprocess.Popen([exe, "cluster", "-d", os.path.abspath(profile), "-m", "all", "-o", out],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with Watcher(tool_proc.pid) as w:
        if tool_proc.wait() != 0:
            raise subprocess.CalledProcessError(tool_proc.returncode, tool_proc.args)
        seconds = time.perf_counter() - start
        u = resource.getrusage(resource.RUSAGE_CHILDREN)  # before the watcher is reaped
        tree = w.stop()
    return seconds, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024.0, tree


def theirs(out):
    path = os.path.join(out, "cluster_analysis_output", "cluster_step_trace_time.csv")
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("Type", "rank") == "rank":
                rows[(int(float(r["Step"])), int(r["Index"]))] = r
    return rows


def ours(ppstream, profile):
    out = subprocess.run([ppstream, "analyze", profile, "--json"], check=True, capture_output=True, text=True).stdout
    rows = {}
    for step in json.loads(out)["steps"]:
        for r in step["ranks"]:
            rows[(step["step"], r["rank"])] = r
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("profile", help="directory holding the ranks' *_ascend_pt / *_ascend_ms directories")
    ap.add_argument("--ppstream", default=os.path.join(here, "..", "build", "ppstream"))
    ap.add_argument("--venv", default=os.path.expanduser("~/.cache/ppstream/msprof-venv"))
    ap.add_argument("--bench", action="store_true")
    args = ap.parse_args()
    exe = tool(args.venv)
    with tempfile.TemporaryDirectory() as tmp:
        # msprof-analyze writes next to its input unless -o: keep the input read-only.
        seconds, cpu, rss, tree = run_msprof(exe, args.profile, tmp)
        if args.bench:
            print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mib": rss, **tree}))
            return 0
        t = theirs(tmp)
    o = ours(args.ppstream, args.profile)
    worst = 0.0
    print(f"{'step':>5} {'rank':>4} {'column':32} {'msprof_ms':>12} {'ours_ms':>12} {'diff_pct':>9}")
    for key in sorted(t):
        mine = o.get(key)
        for col, field in COLUMNS:
            if col not in t[key] or t[key][col] == "":
                continue
            v = float(t[key][col]) / 1000.0
            w = mine.get(field) if mine else None
            d = abs(w - v) / abs(v) * 100 if (w is not None and v) else (0.0 if w == v else float("inf"))
            worst = max(worst, d)
            shown = f"{w:12.3f}" if w is not None else f"{'-':>12}"
            print(f"{key[0]:>5} {key[1]:>4} {col:32} {v:12.3f} {shown} {d:9.3f}")
    ok = worst <= TOLERANCE * 100
    print(f"max difference {worst:.3f} % ({'within' if ok else 'OVER'} {TOLERANCE * 100:.0f} %)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
