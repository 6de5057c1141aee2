"""Step time and peak RSS of `ppstream train` with k gradient buckets per stage, side by side.

    python bench/runtime_buckets.py [CONFIG] [--buckets 1,2] [--steps N] [--out DIR] [--set KEY=VALUE ...]

CONFIG defaults to examples/own-model/pp2-vpp2-hsdp.yaml (a user's model, 8 ranks, CPU) with
``num_layers=8`` (2 layers per virtual stage) and ``data_parallel.sync_last_reduce=false`` (so
every stage is split). Runs the launcher once per k of ``--buckets``
(``data_parallel.reduce_buckets=k``) and prints, per k, the median step time of the slowest rank
over steps 1.. (step 0 is warm-up), the max peak RSS over ranks, the ratio to the first k, and
whether the final loss equals the first k's. Figures are defined in docs/runtime.md ("Benchmark").
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

from runtime_step import ROOT, run

DEFAULT_SETS = ["num_layers=8", "data_parallel.sync_last_reduce=false"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", nargs="?", default=os.path.join(ROOT, "examples", "own-model", "pp2-vpp2-hsdp.yaml"))
    ap.add_argument("--buckets", default="1,2", help="comma-separated k values (default 1,2)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench_runtime_buckets"))
    ap.add_argument("--set", action="append", default=None, help=f"KEY=VALUE (default {' '.join(DEFAULT_SETS)})")
    a = ap.parse_args()
    if a.steps < 2:
        sys.exit("runtime_buckets: --steps must be >= 2 (step 0 is warm-up)")
    try:
        ks = [int(x) for x in a.buckets.split(",")]
    except ValueError:
        sys.exit(f"runtime_buckets: --buckets {a.buckets!r}: expected comma-separated integers, e.g. 1,2")
    sets = DEFAULT_SETS if a.set is None else a.set
    res = {k: run(a.config, a.steps, os.path.join(a.out, f"k{k}"), sets + [f"data_parallel.reduce_buckets={k}"])
           for k in ks}
    step = {k: statistics.median(v["step_ms"][1:]) for k, v in res.items()}
    rss = {k: max(v["peak_rss_mb"]) for k, v in res.items()}
    k0 = ks[0]
    print(f"config {a.config} {' '.join(sets)}, {res[k0]['world']} ranks, {a.steps} steps (median of steps 1..)")
    print(f"{'reduce_buckets':>14}{'step_ms (slowest rank)':>24}{f'vs k={k0}':>10}{'peak_rss_mb max':>17}"
          f"{'final loss':>14}{f'= k={k0}':>8}")
    for k in ks:
        loss = res[k]["losses"][-1]
        print(f"{k:>14}{step[k]:>24.0f}{step[k] / step[k0]:>10.2f}{rss[k]:>17.0f}{loss:>14.6g}"
              f"{str(loss == res[k0]['losses'][-1]):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
