#!/usr/bin/env python3
"""The analyzer at cluster scale, beside Holistic Trace Analysis (docs/analyze.md "Cluster scale").

    python3 bench/bench_cluster.py --ppstream build-rel/ppstream [--ranks 8,64,256] [--hta-ranks 8,64]

For each N a trace set of N ranks is built from the public Kineto samples in a temporary
directory (scripts/make_trace_set.py; removed afterwards), then analyzed as a whole:
- `ppstream analyze DIR --json` (every figure: per-rank overlap, steps, P2P pairing, chains,
  stragglers) under GNU time, once with its reader threads (default) and once with
  PPSTREAM_THREADS=1; the two outputs must be byte-identical (else exit 1);
- HTA 0.5: `TraceAnalysis(trace_dir=DIR)` + `get_comm_comp_overlap()` (scripts/hta_check.py
  --bench-set, in HTA's own venv: --hta-python, default ~/.cache/ppstream/hta-venv/bin/python;
  skipped with a line saying so when absent), for N in --hta-ranks only (HTA at 256 ranks takes
  many minutes on a 2-core machine).
Columns: wall s; CPU s (user + system of all the tool's processes: ours from getrusage of the
reaped GNU time and its child, HTA's getrusage of itself and its reaped workers); memory MiB (ours: peak RSS, one process; HTA: the
larger of its largest process's peak RSS and the sampled peak of the PSS summed over all its
processes, scripts/proc_tree.py, with the most processes seen at once). Then the ratios
(HTA / ours) and, per tool and column, the growth exponent k of a least-squares fit
figure ~ x^k over the measured N (x = N, and x = total JSON bytes); for ppstream also of its
memory above the process floor (the peak RSS of `ppstream --help`, printed first).
"""
import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from make_trace_set import make_trace_set  # noqa: E402


def run_ours(ppstream, trace_dir, threads):
    """(cost dict, stdout bytes) of `ppstream analyze DIR --json` under GNU time."""
    env = dict(os.environ)
    if threads is not None:
        env["PPSTREAM_THREADS"] = str(threads)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as rep:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rep.name, ppstream, "analyze", trace_dir, "--json"],
                             check=True, capture_output=True, env=env).stdout
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        kib = rep.read().split()[-1]
    # CPU: time and its child, reaped (µs steps; time's own %U/%S have 10 ms steps); RSS: time's %M,
    # because a direct child's ru_maxrss starts at this interpreter's RSS (bench/bench_analyze.cpp).
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": seconds, "cpu_seconds": cpu, "memory_mib": float(kib) / 1024.0, "processes": 1}, out


def run_floor(ppstream):
    """Peak RSS (MiB) of `ppstream --help`: the binary and its libraries doing no work."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as rep:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rep.name, ppstream, "--help"], check=True,
                       capture_output=True)
        return float(rep.read().split()[-1]) / 1024.0


def run_hta(hta_python, trace_dir):
    out = subprocess.run([hta_python, os.path.join(HERE, "..", "scripts", "hta_check.py"), "--bench-set", trace_dir],
                         check=True, capture_output=True, text=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    return {"seconds": j["seconds"], "cpu_seconds": j["cpu_seconds"],
            "memory_mib": max(j["peak_rss_mib"], j.get("tree_peak_pss_mib", 0.0)),
            "largest_mib": j["peak_rss_mib"], "processes": j.get("tree_processes", 1), "ranks": j["ranks"]}


def fit_exponent(xs, ys):
    """k of the least-squares fit log y = k log x + c; None with fewer than 2 points."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx > 0 else None


def row(n, size, tool, c):
    procs = f" ({c['processes']} procs)" if c.get("processes", 1) > 1 else ""
    print(f"{n:>5} {size / 1e6:>9.1f} {tool:<28} {c['seconds']:>9.3f} {c['cpu_seconds']:>9.3f} "
          f"{c['memory_mib']:>9.1f}{procs}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ppstream", default=os.path.join(HERE, "..", "build-rel", "ppstream"))
    ap.add_argument("--samples", default=os.path.join(HERE, "..", "tests", "data", "kineto"))
    ap.add_argument("--ranks", default="8,64,256")
    ap.add_argument("--hta-ranks", default="8,64")
    ap.add_argument("--hta-python", default=os.path.expanduser("~/.cache/ppstream/hta-venv/bin/python"))
    ap.add_argument("--tmp", default=None, help="parent of the temporary trace sets (default: the system's)")
    args = ap.parse_args()
    ranks = [int(x) for x in args.ranks.split(",")]
    hta_ranks = {int(x) for x in args.hta_ranks.split(",") if x}
    have_hta = os.path.exists(args.hta_python)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    if not have_hta:
        print(f"HTA skipped: {args.hta_python} does not exist (python3 scripts/hta_check.py creates that venv)")
    floor = run_floor(args.ppstream)
    print(f"ppstream process floor (`ppstream --help`): {floor:.1f} MiB peak RSS")
    print(f"{'ranks':>5} {'JSON MB':>9} {'tool':<28} {'wall s':>9} {'CPU s':>9} {'mem MiB':>9}")
    results = {"ppstream": [], "ppstream 1 thread": [], "HTA": []}
    ok = True
    for n in ranks:
        with tempfile.TemporaryDirectory(prefix=f"ppstream_set{n}_", dir=args.tmp) as d:
            info = make_trace_set(args.samples, n, d)
            size = info["json_bytes"]
            ours, out = run_ours(args.ppstream, d, None)
            row(n, size, "ppstream analyze", ours)
            one, out1 = run_ours(args.ppstream, d, 1)
            row(n, size, "ppstream analyze (1 thread)", one)
            if out != out1:
                print(f"  output with PPSTREAM_THREADS=1 differs from the threaded run at {n} ranks")
                ok = False
            results["ppstream"].append((n, size, ours))
            results["ppstream 1 thread"].append((n, size, one))
            if have_hta and n in hta_ranks:
                hta = run_hta(args.hta_python, d)
                if hta["ranks"] != n:
                    print(f"  HTA's overlap table has {hta['ranks']} rows, expected {n}")
                    ok = False
                row(n, size, "HTA load + comm_comp_overlap", hta)
                print(f"{'':>16}→ ppstream {hta['cpu_seconds'] / ours['cpu_seconds']:.1f}× less CPU, "
                      f"{hta['seconds'] / ours['seconds']:.1f}× less wall, "
                      f"{hta['memory_mib'] / ours['memory_mib']:.1f}× less memory "
                      f"(HTA's largest process {hta['largest_mib']:.0f} MiB)", flush=True)
                results["HTA"].append((n, size, hta))
            elif n in hta_ranks:
                pass
            else:
                print(f"{'':>16}HTA not run at {n} ranks (--hta-ranks)")
    print("\ngrowth exponent k (figure ~ x^k, least squares over the measured sets)")
    print(f"{'tool':<28} {'x':<6} {'wall':>7} {'CPU':>7} {'memory':>7} {'memory above the floor':>7}")
    for tool, pts in results.items():
        if len(pts) < 2:
            continue
        for label, xi in (("N", 0), ("bytes", 1)):
            xs = [p[xi] for p in pts]
            ks = [fit_exponent(xs, [p[2][col] for p in pts]) for col in ("seconds", "cpu_seconds", "memory_mib")]
            if tool.startswith("ppstream"):
                ks.append(fit_exponent(xs, [p[2]["memory_mib"] - floor for p in pts]))
            print(f"{tool:<28} {label:<6} " + " ".join(f"{k:>7.2f}" if k is not None else f"{'-':>7}" for k in ks))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
