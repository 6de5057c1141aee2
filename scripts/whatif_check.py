#!/usr/bin/env python3
"""Compare `ppstream whatif` with the straggler what-if artifact's own tool, side by side.

The artifact (ByteDance-Seed/StragglerAnalysis, "Understanding Stragglers in Large Model Training
Using What-if Analysis", OSDI 2025; Apache-2.0) is not on PyPI: its code is in --artifact DIR
(a checkout of that repository, with analyzer/, meta-X.yaml, trace-X.parquet and
timeline-X.json.gz; no test needs it). It is a check-time oracle only: this script makes its own venv (--venv,
default ~/.cache/ppstream/wia-venv) with pandas 2.2.x, pyarrow, scipy, numpy<2.2 (the artifact
breaks under pandas 3) from PyPI, runs the artifact's analyzer/wia.py, compute_mw.py and
compute_ms.py there on the parquet table, runs `ppstream whatif --json` on the timeline, and prints
S, S per DP rank / stage / op type, M_W and M_S beside each other with the relative difference,
then CPU time and peak memory of both:
    python3 scripts/whatif_check.py --artifact PATH/TO/StragglerAnalysis \\
        --ppstream build-rel/ppstream [--traces AR ST] [--job DIR_OF_A_SYNTHETIC_JOB] [--evaluator engine|graph]
Exit status 1 when a figure differs by more than 1 % (M_W, M_S: 0.03) or the worst worker, stage
or op type differs. CPU time and peak RSS come from GNU time (user+sys seconds, max RSS) for each
process: the artifact's three processes are summed (CPU) and maxed (memory).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

PACKAGES = ["pandas>=2.2,<2.3", "pyarrow", "scipy", "numpy<2.2", "pyyaml", "tqdm", "ujson"]


def ensure_venv(venv):
    py = os.path.join(venv, "bin", "python")
    probe = [py, "-c", "import pandas, pyarrow, scipy, yaml, tqdm; assert pandas.__version__.startswith('2.2')"]
    if os.path.exists(py) and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", *PACKAGES], check=True)
    subprocess.run(probe, check=True)
    return py


def timed(cmd, env=None, cwd=None):
    """Runs cmd under GNU time; returns (stdout, cpu_seconds, peak_rss_mib)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        p = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%U %S %M", *cmd], env=env, cwd=cwd,
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stdout + p.stderr)
            raise SystemExit(f"whatif_check: {' '.join(cmd[:3])} … failed with status {p.returncode}")
        user, sys_s, rss_kb = tf.read().split()[-3:]
    return p.stdout, float(user) + float(sys_s), int(rss_kb) / 1024


def run_artifact(py, art, name, trace, meta, out):
    env = dict(os.environ, PYTHONPATH=f"{art}:{os.path.join(art, 'analyzer')}")
    an = os.path.join(art, "analyzer")
    cpu = mem = 0.0
    _, c, m = timed([py, os.path.join(an, "wia.py"), "--metadata", meta, "--trace", trace, "--dump-dir", out,
                     "--root", out], env=env, cwd=art)
    cpu, mem = cpu + c, max(mem, m)
    res = os.path.join(out, f"{name}.json")
    for tool in ("compute_mw.py", "compute_ms.py"):
        _, c, m = timed([py, os.path.join(an, tool), "--analysis-result", res, "--trial", name, "--root", out,
                         "--dump-dir", out], env=env, cwd=art)
        cpu, mem = cpu + c, max(mem, m)
    with open(res) as f:
        r = json.load(f)
    with open(os.path.join(out, f"mw-{name}.json")) as f:
        r["Mw"] = json.load(f)["Mw"]
    with open(os.path.join(out, f"ms-{name}.json")) as f:
        r["Ms"] = json.load(f)["Ms"]
    return r, cpu, mem


def worst(d):
    return max(d.items(), key=lambda kv: kv[1])[0] if d else None


def compare(name, theirs, ours):
    rows, ok = [], True

    def row(field, a, b, tol, absolute=False):
        nonlocal ok
        diff = abs(b - a) if absolute else abs(b - a) / abs(a)
        bad = diff > tol
        ok &= not bad
        rows.append(f"  {field:<44} {a:>12.5f} {b:>12.5f} {diff * (1 if absolute else 100):>10.4f}"
                    f"{'' if absolute else ' %'}{'  <-- differs' if bad else ''}")

    row("S (blocking_slowdown)", theirs["blocking_slowdown"], ours["slowdown"], 0.01)
    row("launch_slowdown", theirs["launch_slowdown"], ours["launch_slowdown"], 0.01)
    for key, mine in (("dp_rank", "by_dp_rank"), ("stage", "by_stage"), ("optype", "by_op_type")):
        t = theirs.get(f"blocking_decompose_by_{key}") or {}
        for k in sorted(t, key=lambda k: -t[k]):
            if k not in ours[mine]:
                ok = False
                rows.append(f"  {mine}[{k}] missing in ours")
                continue
            row(f"{mine}[{k}]", t[k], ours[mine][k], 0.01)
        if worst(t) != worst(ours[mine]):
            ok = False
            rows.append(f"  worst {key}: artifact {worst(t)}, ppstream {worst(ours[mine])}  <-- differs")
    row("M_W (abs. diff)", theirs["Mw"], ours["m_w"], 0.03, absolute=True)
    row("M_S (abs. diff)", theirs["Ms"], ours["m_s"], 0.03, absolute=True)
    print(f"\n{name}: {'field':<44} {'artifact':>12} {'ppstream':>12} {'diff':>12}")
    print("\n".join(rows))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifact", required=True, help="the artifact's directory (analyzer/, data files)")
    ap.add_argument("--ppstream", default="build/ppstream")
    ap.add_argument("--venv", default=os.path.expanduser("~/.cache/ppstream/wia-venv"))
    ap.add_argument("--traces", nargs="*", default=["AR", "ST"])
    ap.add_argument("--evaluator", choices=["engine", "graph"],
                    help="ppstream's evaluator (whatif --evaluator; default: ppstream's own, the engine)")
    ap.add_argument("--job", action="append", default=[],
                    help="a directory holding meta-X.yaml, trace-X.parquet, timeline-X.json.gz (e.g. from "
                         "scripts/make_whatif_job.py); may repeat")
    args = ap.parse_args()
    art = os.path.abspath(args.artifact)
    py = ensure_venv(args.venv)
    jobs = [(t, art) for t in args.traces] + [(os.path.basename(os.path.normpath(d)), os.path.abspath(d)) for d in args.job]
    ok, bench = True, []
    for name, d in jobs:
        if d != art:  # a synthetic job: its files are named by its directory's trial name
            meta = json.load(open(os.path.join(d, "job.json")))
            name = meta["trial_name"]
        trace, meta_yaml, timeline = (os.path.join(d, f) for f in
                                      (f"trace-{name}.parquet", f"meta-{name}.yaml", f"timeline-{name}.json.gz"))
        with tempfile.TemporaryDirectory() as out:
            theirs, cpu_a, mem_a = run_artifact(py, art, name, trace, meta_yaml, out)
        evaluator = ["--evaluator", args.evaluator] if args.evaluator else []
        text, cpu_o, mem_o = timed([args.ppstream, "whatif", timeline, "--json", *evaluator])
        ours = json.loads(text)
        ok &= compare(name, theirs, ours)
        bench.append((name, ours["ops"], cpu_a, cpu_o, mem_a, mem_o))
    print(f"\n{'job':<10} {'ops':>10} {'artifact_cpu_s':>15} {'ppstream_cpu_s':>15} {'cpu_ratio':>10} "
          f"{'artifact_mib':>13} {'ppstream_mib':>13} {'mem_ratio':>10}")
    for name, ops, ca, co, ma, mo in bench:
        # GNU time counts CPU in 10 ms ticks: below one tick the ratio is a lower bound.
        ratio = f"{'>' if co < 0.01 else ''}{ca / max(co, 0.01):.1f}x"
        print(f"{name:<10} {ops:>10} {ca:>15.2f} {co:>15.2f} {ratio:>10} {ma:>13.1f} {mo:>13.1f} {ma / mo:>9.1f}x")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
