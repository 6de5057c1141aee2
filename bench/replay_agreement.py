"""replay against simulate on the 12 configs of tests/python/replay/replay_configs.py (every
schedule, DP mode, transport, overlap flags, stragglers): one run of 3 steps each (replay's
figures are the median step's), inline and async where the config has data parallelism; prints measured vs simulated step time and each PP rank's
largest compute wait with their ratios, and which figures are outside 10 % (waits: 10 % + 2 %
of the step; docs/replay.md, "Bench"). Then per-rank compute-wait agreement: every rank's
compute_wait_ms, measured against simulated, and how many are within 10 % (no floor); pass
`--set cost.KEY=V` (e.g. the runtime keys `ppstream replay CONFIG --calibrate` prints) to both
sides. bench/host_issue_agreement.py does that with a calibration on another config.
Asserts nothing; exits 0 unless a run fails.

    python3 bench/replay_agreement.py [--ppstream PATH] [--only NAME ...] [--set KEY=VALUE ...]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python", "replay"))
from replay_configs import CONFIGS, config_text  # noqa: E402

REL, FLOOR = 0.10, 0.02


def ratio(a, b):
    return a / b if b else float("nan")


def within(measured, simulated, step, floor):
    return abs(measured - simulated) <= REL * simulated + floor * step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ppstream", default=shutil.which("ppstream") or "ppstream")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override passed to replay (and so to its simulated side)")
    args = ap.parse_args()
    sets = [a for kv in args.set for a in ("--set", kv)]
    per_rank = []  # (config, policy, rank, measured, simulated)
    names = sorted(CONFIGS) if not args.only else args.only
    outside, figures = [], 0
    print(f"{os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'config':<28}{'policy':<8}{'figure':<22}{'measured':>10}{'simulated':>11}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            kw = CONFIGS[name]
            cfg = os.path.join(tmp, f"{name}.yaml")
            with open(cfg, "w") as f:
                f.write(config_text(**kw))
            both = ["--reduce-grad", "both"] if kw.get("mode", "fsdp") != "none" else []
            res = subprocess.run([args.ppstream, "replay", cfg, "--json", "--timeout", "60", "--steps", "3", *both, *sets],
                                 capture_output=True, text=True, timeout=300)
            if res.returncode != 0:
                print(f"{name}: replay failed (exit {res.returncode}):\n{res.stderr[-2000:]}")
                return 1
            doc = json.loads(res.stdout)
            for policy, m in doc["policies"].items():
                s = doc["simulated"]["policies"][policy]
                step = s["step_time_ms"]
                rows = [("step_time_ms", m["step_time_ms"], step, 0.0)]
                for mr, sr in zip(m["pp_rank_summary"], s["pp_rank_summary"]):
                    rows.append((f"pp{mr['pp_rank']} compute_wait_ms", mr["max_compute_wait_ms"],
                                 sr["max_compute_wait_ms"], FLOOR))
                for mr, sr in zip(m["ranks"], s["ranks"]):
                    per_rank.append((name, policy, mr["rank"], mr["compute_wait_ms"], sr["compute_wait_ms"]))
                for fig, a, b, floor in rows:
                    ok = within(a, b, step, floor)
                    figures += 1
                    if not ok:
                        outside.append(f"{name} {policy} {fig}")
                    print(f"{name:<28}{policy:<8}{fig:<22}{a:>10.2f}{b:>11.2f}{ratio(a, b):>8.3f}"
                          f"{'' if ok else '  outside'}")
    print(f"\n{figures - len(outside)} of {figures} figures within 10 % of the simulator "
          f"(waits: 10 % + 2 % of the step); outside: {', '.join(outside) if outside else 'none'}")
    print_per_rank(per_rank, args.set)
    return 0


def print_per_rank(rows, sets):
    """Every rank's compute wait, measured / simulated, and the share within 10 % (no floor)."""
    print(f"\nper-rank compute_wait_ms (replica 0's ranks{'; ' + ', '.join(sets) if sets else ''})")
    print(f"{'config':<28}{'policy':<8}{'rank':>5}{'measured':>10}{'simulated':>11}{'ratio':>8}")
    inside = 0
    for name, policy, rank, a, b in rows:
        ok = abs(a - b) <= REL * b
        inside += ok
        print(f"{name:<28}{policy:<8}{rank:>5}{a:>10.2f}{b:>11.2f}{ratio(a, b):>8.3f}{'' if ok else '  outside'}")
    ratios = sorted(ratio(a, b) for *_, a, b in rows if b > 0)
    if ratios:
        print(f"{inside} of {len(rows)} per-rank compute waits within 10 %; measured / simulated from "
              f"{ratios[0]:.3f} to {ratios[-1]:.3f} (median {ratios[len(ratios) // 2]:.3f})")


if __name__ == "__main__":
    sys.exit(main())
