"""Replay against simulate on configs the calibration did not see (issue 22, item 6; docs/replay.md
"Host issue and overhead"). `ppstream replay CAL --calibrate` runs once on a separate calibration
config; its measured runtime keys (by default p2p_latency_ms, collective_alpha_ms, host_issue_ms:
replay's own costs, see --keys) are written into each test config's `cost:` section; then per
config `ppstream replay CFG --reduce-grad both --json` and `ppstream simulate CFG --cluster
--reduce-grad both --json` run, and per policy and rank the table prints compute_wait_ms measured
and simulated with their ratio, and the step times. Each config runs --repeat times; the figures
are the medians over the repeats (each repeat's figures are replay's median of --steps steps).
A wait is `outside` when it is more than 10 % from the simulator's. Prints the load average
before and after. Asserts nothing; exits 0 unless a run fails.

    nice -n 10 python3 bench/host_issue_agreement.py [--ppstream PATH] [--steps N] [--repeat R]
        [--keys k1,k2,...] [--no-calibrate]

--no-calibrate runs the configs as written (the "before" column of docs/replay.md's table).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "replay"))
from replay_configs import config_text  # noqa: E402

RUNTIME_KEYS = ("p2p_latency_ms", "collective_alpha_ms", "host_issue_ms")
HSDP = dict(mode="hsdp", shard=2, replicate=2)
TAIL = """straggler:
  tails:
    - {pp_rank: 1, dp_index: 1, delay_ms: 40, collectives: [reduce_grad]}
"""
# The calibration config: 1F1B, PP4 x FSDP 2 (8 processes), one batched P2P stream; none of the
# test configs below has this shape.
CALIBRATION = config_text(pp=4, mb=8, shard=2)
# Interleaved and not, FSDP and HSDP, both policies (each config runs inline and async), 4-8
# processes; the seed's layout at 8 processes, FSDP 2 (examples/replay-seed-scaled.yaml) first.
CONFIGS = {
    "seed-scaled (pp4 vpp2 fsdp2, 8)": os.path.join(ROOT, "examples", "replay-seed-scaled.yaml"),
    "1f1b-hsdp-multi (pp2 hsdp2x2, 8)": config_text(transport="multi_stream", **HSDP),
    "interleaved-hsdp (pp2 vpp2 hsdp2x2, 8)": config_text(schedule="interleaved_1f1b", vpp=2, transport="multi_stream",
                                                          **HSDP),
    "gpipe-fsdp (pp2 fsdp2, 4)": config_text(schedule="gpipe"),
    "interleaved-fsdp-tail (pp2 vpp2 fsdp2, 4)": config_text(schedule="interleaved_1f1b", vpp=2, straggler=TAIL),
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p.stdout


def calibrated_keys(text, keys):
    """The `key: value` lines of `keys` in a `replay --calibrate` output."""
    got = {}
    for line in text.splitlines():
        m = re.match(r"^  ([a-z0-9_]+): (\S+)$", line)
        if m and m.group(1) in keys:
            got[m.group(1)] = m.group(2)
    missing = [k for k in keys if k not in got]
    if missing:
        sys.exit(f"replay --calibrate printed no {missing}:\n{text}")
    return got


def with_keys(text, keys):
    """`text` (a config) with each cost key set to its value (replaced where present, else added
    at the top of the cost: section)."""
    lines = text.splitlines()
    start = lines.index("cost:")
    for key, value in keys.items():
        for i in range(start + 1, len(lines)):
            if re.match(rf"^\s+{key}:", lines[i]):
                lines[i] = f"  {key}: {value}"
                break
        else:
            lines.insert(start + 1, f"  {key}: {value}")
    return "\n".join(lines) + "\n"


def figures(ppstream, cfg, steps):
    """{policy: {"step": (measured, simulated), "waits": {rank: (measured, simulated)}}} of one repeat."""
    rep = json.loads(run([ppstream, "replay", cfg, "--reduce-grad", "both", "--steps", str(steps), "--json"]))
    sim = json.loads(run([ppstream, "simulate", cfg, "--cluster", "--reduce-grad", "both", "--json"]))
    out = {}
    for policy, rows in rep["replay"]["measured_vs_simulated"].items():
        waits = {}
        for name, row in rows.items():
            m = re.match(r"^r(\d+) compute_wait_ms$", name)
            if m:
                waits[int(m.group(1))] = (row["measured"], row["simulated"])
        # simulate --cluster --json lists the first DP rank of each PP rank: the same figures.
        for r in sim["policies"][policy]["ranks"]:
            if abs(r["compute_wait_ms"] - waits[r["rank"]][1]) > 1e-6:
                sys.exit(f"{cfg}: simulate's r{r['rank']} wait {r['compute_wait_ms']} != replay's simulated "
                         f"{waits[r['rank']][1]}")
        out[policy] = {"step": (rows["step_time_ms"]["measured"], sim["policies"][policy]["step_time_ms"]),
                       "waits": waits}
    return out


def median_of(repeats):
    med = {}
    for policy in repeats[0]:
        step = tuple(statistics.median(r[policy]["step"][k] for r in repeats) for k in (0, 1))
        waits = {rank: tuple(statistics.median(r[policy]["waits"][rank][k] for r in repeats) for k in (0, 1))
                 for rank in repeats[0][policy]["waits"]}
        med[policy] = {"step": step, "waits": waits}
    return med


def load():
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ppstream", default=shutil.which("ppstream") or "ppstream")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keys", default=",".join(RUNTIME_KEYS))
    ap.add_argument("--no-calibrate", action="store_true")
    ap.add_argument("--only", nargs="*", help="run only the configs whose names start with one of these")
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {load()} (start)")
    with tempfile.TemporaryDirectory() as tmp:
        keys = {}
        if not args.no_calibrate:
            cal = os.path.join(tmp, "calibration.yaml")
            with open(cal, "w") as f:
                f.write(CALIBRATION)
            keys = calibrated_keys(run([args.ppstream, "replay", cal, "--calibrate"]), args.keys.split(","))
            print("calibrated on 1f1b pp4 fsdp2 (8 processes): " + ", ".join(f"{k} = {v}" for k, v in keys.items()))
        outside = total = 0
        print(f"{'config':<42}{'policy':<8}{'rank':>5}{'wait ms measured':>18}{'simulated':>11}{'ratio':>7}")
        for n, (name, text) in enumerate(CONFIGS.items()):
            if args.only and not any(name.startswith(o) for o in args.only):
                continue
            if text.endswith(".yaml"):
                with open(text) as f:
                    text = f.read()
            cfg = os.path.join(tmp, f"config{n}.yaml")
            with open(cfg, "w") as f:
                f.write(with_keys(text, keys))
            med = median_of([figures(args.ppstream, cfg, args.steps) for _ in range(args.repeat)])
            for policy, fig in med.items():
                m, s = fig["step"]
                print(f"{name:<42}{policy:<8}{'step':>5}{m:>18.1f}{s:>11.1f}{m / s:>7.3f}")
                for rank, (m, s) in sorted(fig["waits"].items()):
                    total += 1
                    bad = s == 0 or abs(m / s - 1) > 0.10
                    outside += bad
                    ratio = f"{m / s:>7.3f}" if s else f"{'-':>7}"
                    print(f"{'':<42}{'':<8}{rank:>5}{m:>18.1f}{s:>11.1f}{ratio}{'  outside' if bad else ''}")
        print(f"{total - outside} of {total} per-rank waits within 10 % of the simulator's; "
              f"load average {load()} (end)")


if __name__ == "__main__":
    main()
