#!/usr/bin/env python3
"""Compare ppstream's comm/compute overlap with Holistic Trace Analysis on the Kineto samples.

HTA is a check-time tool only (never a runtime dependency). Install it in a throwaway venv:
    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis
    /tmp/hta-venv/bin/python scripts/hta_check.py --ppstream build/ppstream
HTA drops the last profiler step by default, so ours is summed over the same steps:
    ratio = Σ_steps |comm ∩ compute| / Σ_steps |comm|   (steps = all but the last).
Exit status 1 when a rank differs by more than 0.5 percentage points.
`--bench FILE` instead loads FILE with HTA once and prints {"seconds", "peak_rss_mib"} as JSON.
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


def our_overlap(ppstream, path):
    out = subprocess.run([ppstream, "analyze", path, "--json"], check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    steps = result["steps"][:-1] if len(result["steps"]) > 1 else result["steps"] or [result["total"]]
    per_rank = {}
    for step in steps:
        for r in step["ranks"]:
            o = next(x for x in r["overlap"] if x["kind"] == "all" and x["group"] == "")
            acc = per_rank.setdefault(r["rank"], [0.0, 0.0])
            acc[0] += o["overlap_ms"]
            acc[1] += o["comm_ms"]
    return {rank: (100.0 * a / c if c else float("nan")) for rank, (a, c) in per_rank.items()}


def bench(path):
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        TraceAnalysis(trace_dir=hta_dir_for(path, tmp))
        seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_rss_mib": peak_kib / 1024.0}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--ppstream", default=os.path.join(here, "..", "build", "ppstream"))
    ap.add_argument("--traces", default=os.path.join(here, "..", "..", "shared", "traces", "kineto"))
    ap.add_argument("--bench", metavar="FILE")
    args = ap.parse_args()
    if args.bench:
        bench(args.bench)
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
