#!/usr/bin/env python3
"""Compare ppstream's comm/compute overlap with Holistic Trace Analysis on the Kineto samples.

HTA is a check-time tool only (never a runtime dependency): when it is not importable, the
script creates its own venv (--venv, default ~/.cache/ppstream/hta-venv), installs
HolisticTraceAnalysis from PyPI there and re-runs itself with that interpreter:
    python3 scripts/hta_check.py --ppstream build/ppstream
HTA drops the last profiler step by default and puts device work in the step of its launch; we
compare with our `hta_window` figure, which does the same (docs/analyze.md).
`--emit-expected FILE` writes HTA's figures (overlap per rank, device events per iteration and
category) as JSON with the HTA version, the expected values of the C++ tests
(tests/data/hta/expected.json).
Exit status 1 when a rank differs by more than 0.5 percentage points.
`--bench FILE` instead loads FILE with HTA once and prints {"seconds", "cpu_seconds", "peak_rss_mib",
"worker_processes_peak_rss_mib", "tree_peak_rss_mib", "tree_peak_pss_mib", "tree_processes"} as JSON (wall
and CPU time of the load; peak RSS of this process; the sampled peaks of this process and any workers
together, scripts/proc_tree.py).
`--bench-set DIR` loads a directory of per-rank traces (scripts/make_trace_set.py) with HTA and
computes `get_comm_comp_overlap` for every rank: the same JSON, for load and overlap together,
plus "ranks" (rows of HTA's overlap table).
"""
import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time

from proc_tree import Watcher

SAMPLES = ["hta-sampled_rank-0.json.gz", "hta-sampled_rank-1.json.gz", "hta-nccl_data.json.gz"]
TOLERANCE_PP = 0.5


def hta_dir_for(path, tmp):
    """HTA reads a directory of traces: give each file its own directory."""
    d = os.path.join(tmp, os.path.basename(path).replace(".json.gz", ""))
    os.makedirs(d, exist_ok=True)
    link = os.path.join(d, os.path.basename(path))
    if not os.path.exists(link):
        os.symlink(os.path.abspath(path), link)
    return d


def hta_overlap(path, tmp):
    from hta.trace_analysis import TraceAnalysis
    df = TraceAnalysis(trace_dir=hta_dir_for(path, tmp)).get_comm_comp_overlap(visualize=False)
    return {int(r["rank"]): float(r["comp_comm_overlap_pctg"]) for r in df.to_dict("records")}


def hta_expected(path, tmp):
    """HTA's overlap per rank and its device events (stream >= 0) per iteration and category."""
    from hta.trace_analysis import TraceAnalysis
    ta = TraceAnalysis(trace_dir=hta_dir_for(path, tmp))
    overlap = {int(r["rank"]): float(r["comp_comm_overlap_pctg"])
               for r in ta.get_comm_comp_overlap(visualize=False).to_dict("records")}
    sym = ta.t.symbol_table.get_sym_table()
    out = {"overlap_pct": {str(k): v for k, v in overlap.items()}, "device_events": {}}
    for rank in ta.t.get_ranks():
        df = ta.t.get_trace(rank)
        dev = df[df.stream >= 0]
        rows = {}
        for (it, cat), g in dev.groupby(["iteration", "cat"]):
            rows.setdefault(str(int(it)), {})[sym[int(cat)]] = {"count": int(len(g)), "dur_us": float(g.dur.sum())}
        out["device_events"][str(int(rank))] = rows
    return out


def emit_expected(traces, dest):
    import importlib.metadata as md
    logging.disable(logging.WARNING)
    result = {"hta_version": md.version("HolisticTraceAnalysis"),
              "produced_by": "scripts/hta_check.py --emit-expected", "files": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in SAMPLES:
            result["files"][name] = hta_expected(os.path.join(traces, name), tmp)
    with open(dest, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


def ensure_hta(venv):
    """Re-executes this script under a venv holding HTA when HTA is not importable here."""
    try:
        import hta  # noqa: F401
        return
    except ImportError:
        pass
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "HolisticTraceAnalysis"], check=True)
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def our_overlap(ppstream, path):
    out = subprocess.run([ppstream, "analyze", path, "--json"], check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    window = result["hta_window"] or result["total"]
    per_rank = {}
    for r in window["ranks"]:
        o = next(x for x in r["overlap"] if x["kind"] == "all" and x["group"] == "")
        per_rank[r["rank"]] = 100.0 * o["ratio"] if o["ratio"] is not None else float("nan")
    return per_rank


def bench(path):
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    with tempfile.TemporaryDirectory() as tmp, Watcher(os.getpid()) as w:
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        TraceAnalysis(trace_dir=hta_dir_for(path, tmp))
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        # HTA may parse in worker processes: count their CPU, and their peak RSS if larger
        # (read before the watcher is reaped, so that its CPU is not counted).
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        tree = w.stop()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) + kids.ru_utime + kids.ru_stime
    peak = max(after.ru_maxrss, kids.ru_maxrss)
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mib": peak / 1024.0,
                      "worker_processes_peak_rss_mib": kids.ru_maxrss / 1024.0, **tree}))


def bench_set(trace_dir):
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    with Watcher(os.getpid()) as w:
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        overlap = TraceAnalysis(trace_dir=trace_dir).get_comm_comp_overlap(visualize=False)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # HTA's parsing workers, before the watcher is reaped
        tree = w.stop()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) + kids.ru_utime + kids.ru_stime
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mib": max(after.ru_maxrss, kids.ru_maxrss) / 1024.0,
                      "worker_processes_peak_rss_mib": kids.ru_maxrss / 1024.0, "ranks": int(len(overlap)), **tree}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--ppstream", default=os.path.join(here, "..", "build", "ppstream"))
    ap.add_argument("--traces", default=os.path.join(here, "..", "tests", "data", "kineto"))
    ap.add_argument("--bench", metavar="FILE")
    ap.add_argument("--bench-set", metavar="DIR")
    ap.add_argument("--emit-expected", metavar="FILE")
    ap.add_argument("--venv", default=os.path.expanduser("~/.cache/ppstream/hta-venv"))
    args = ap.parse_args()
    ensure_hta(args.venv)
    if args.emit_expected:
        emit_expected(args.traces, args.emit_expected)
        return 0
    if args.bench:
        bench(args.bench)
        return 0
    if args.bench_set:
        bench_set(args.bench_set)
        return 0
    logging.disable(logging.WARNING)
    worst = 0.0
    print(f"{'file':32} {'rank':>4} {'hta_pct':>8} {'ours_pct':>9} {'diff_pp':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in SAMPLES:
            path = os.path.join(args.traces, name)
            theirs = hta_overlap(path, tmp)
            ours = our_overlap(args.ppstream, path)
            for rank, h in sorted(theirs.items()):
                o = ours.get(rank, float("nan"))
                d = abs(o - h)
                worst = max(worst, d)
                print(f"{name:32} {rank:>4} {h:>8.2f} {o:>9.2f} {d:>8.2f}")
    ok = worst <= TOLERANCE_PP
    print(f"max difference {worst:.2f} pp ({'within' if ok else 'OVER'} {TOLERANCE_PP} pp)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
