"""Step time and peak RSS of `ppstream train` with and without forward recompute, side by side.

    python bench/runtime_step.py [CONFIG] [--steps N] [--out DIR]

CONFIG defaults to examples/small-pp2-vpp2-hsdp-train.yaml (8 ranks, CPU). Runs the launcher
twice — ``train.recompute=true`` (before: every backward reruns its stage's forward) and the
default (after: backward on the recorded forward graph) — and prints, per run, the median step
time of the slowest rank over steps 1.. (step 0 is warm-up), the peak RSS per rank, and the
after/before ratios. Figures are defined in docs/runtime.md ("Benchmark").
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(config: str, steps: int, out: str, sets: list[str]) -> dict:
    """Runs the launcher on ``config`` with ``--set`` for each of ``sets``; returns its summary.json."""
    cmd = [sys.executable, "-m", "ppstream.mindspore.train", config, "--steps", str(steps), "--out", out]
    for kv in sets:
        cmd += ["--set", kv]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"runtime_step: {' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        return json.load(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", nargs="?", default=os.path.join(ROOT, "examples", "small-pp2-vpp2-hsdp-train.yaml"))
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench_runtime_step"))
    a = ap.parse_args()
    if a.steps < 2:
        sys.exit("runtime_step: --steps must be >= 2 (step 0 is warm-up)")
    res = {name: run(a.config, a.steps, os.path.join(a.out, name), [f"train.recompute={str(rc).lower()}"])
           for name, rc in (("before_recompute", True), ("after_recorded_graph", False))}
    step = {k: statistics.median(v["step_ms"][1:]) for k, v in res.items()}
    rss = {k: v["peak_rss_mb"] for k, v in res.items()}
    b, f = "before_recompute", "after_recorded_graph"
    print(f"config {a.config}, {res[b]['world']} ranks, {a.steps} steps (median of steps 1..)")
    print(f"{'':24}{'before (recompute)':>20}{'after (recorded graph)':>24}{'after/before':>14}")
    print(f"{'step_ms (slowest rank)':24}{step[b]:20.0f}{step[f]:24.0f}{step[f] / step[b]:14.2f}")
    print(f"{'peak_rss_mb max':24}{max(rss[b]):20.0f}{max(rss[f]):24.0f}{max(rss[f]) / max(rss[b]):14.2f}")
    print("peak_rss_mb per rank   before " + " ".join(f"{x:.0f}" for x in rss[b]))
    print("                       after  " + " ".join(f"{x:.0f}" for x in rss[f]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
