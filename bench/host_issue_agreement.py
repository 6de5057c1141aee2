"""Replay against simulate, per rank and per wait, on configs the calibration did not see (issue 22,
item 6; docs/replay.md "Host issue and overhead", where every figure printed here is defined).

Per process count (4 and 8: 1 and 2 processes per core on this 2-core machine, so CPU
oversubscription is a measured factor, not a guess) `ppstream replay CAL --calibrate` runs once
on a calibration config of that size that no test config has; its measured runtime keys (by
default p2p_latency_ms, collective_alpha_ms, host_issue_ms: replay's own costs) are written into
the `cost:` section of each test config of that size. Then per config and repeat
`ppstream replay CFG --reduce-grad both --steps N --json` and `ppstream simulate CFG --cluster
--reduce-grad both --json` run. While each config runs, a sampler records the machine's state:
the 1-minute load average, the instantaneous runnable count (/proc/loadavg's 4th field, replay's
own threads included) and the wake-up latency of a thread sleeping 2 ms (its overshoot, p50 and
p99) — the resolution below which no wait can agree.

Per config and policy it prints: the step ratio and difference (measured − simulated, ms), how
many per-rank compute waits are within 10 % of the simulator's, the worst ratio, the smallest and
largest per-rank wait difference (ms; equal on every rank when one late event shifts the whole
step), the sampler's figures (load average min-max, mean runnable count, wake-up p50 and p99 ms),
and for every rank outside
10 %: measured and simulated wait, their difference (ms) split by what the rank waited on —
the first P2P receive from each peer in the step (`p2p first`), later P2P receives (`p2p`),
collectives (`coll`), other — and its largest single differences. A rank whose 10 % is below the
p99 wake-up latency is flagged `below resolution` (counted, not excused). The summary line per
process count gives the count within 10 %; the last block what the whole disagreement is made
of (the sum of |difference| by kind). Figures are the median over the repeats (per-rank totals);
the split is the median repeat's. Asserts nothing; exits 0 unless a run fails.

    nice -n 10 python3 bench/host_issue_agreement.py [--ppstream PATH] [--steps N] [--repeat R]
        [--keys k1,k2,...] [--no-calibrate] [--only NAME...] [--np 4|8] [--json OUT]
        [--issue in-step|ahead] [--comm-time model|real]

--no-calibrate runs the configs as written (their own p2p_latency_ms 1-2 ms, alpha 0.01-1 ms).
--issue and --comm-time are passed to replay (defaults in-step, model); with --comm-time real the
calibrated configs also get the calibration's zero bandwidths. The summary line per process
count also counts the waits below resolution; each calibration line prints calibrate's mean
excess over the mean (docs/replay.md, "The mean floor's bias") and over the key it wrote, the
self-consistent floor m (E[(X - m)+], "The self-consistent floor"; '-' for a calibration that
predates it).
The lead's quiet-window command (about 4 minutes): see docs/replay.md.
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
import threading
import time

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
# Calibration configs, one per process count; no test config below has either shape.
CALIBRATION = {
    8: ("1f1b pp4 fsdp2", config_text(pp=4, mb=8, shard=2)),
    4: ("1f1b pp2 ddp2", config_text(mode="hsdp", shard=1, replicate=2, mb=8)),
}
# (name, processes, config text or path). Interleaved and not, FSDP and HSDP, both policies (each
# config runs inline and async). The two multi_stream pairs are the same schedule at 8 processes
# (HSDP 2 x 2) and at 4 (FSDP 2): the oversubscription comparison.
CONFIGS = [
    ("seed-scaled (pp4 vpp2 fsdp2)", 8, os.path.join(ROOT, "examples", "replay-seed-scaled.yaml")),
    ("1f1b-hsdp-multi (pp2 hsdp2x2)", 8, config_text(transport="multi_stream", **HSDP)),
    ("interleaved-hsdp (pp2 vpp2 hsdp2x2)", 8, config_text(schedule="interleaved_1f1b", vpp=2, transport="multi_stream",
                                                           **HSDP)),
    ("1f1b-fsdp-multi (pp2 fsdp2)", 4, config_text(transport="multi_stream")),
    ("interleaved-fsdp-multi (pp2 vpp2 fsdp2)", 4, config_text(schedule="interleaved_1f1b", vpp=2,
                                                               transport="multi_stream")),
    ("gpipe-fsdp (pp2 fsdp2)", 4, config_text(schedule="gpipe")),
    ("interleaved-fsdp-tail (pp2 vpp2 fsdp2)", 4, config_text(schedule="interleaved_1f1b", vpp=2, straggler=TAIL)),
]
# What the calibration zeroes besides the runtime keys (0 = free): with --comm-time real replay's
# transfers are real, so the simulator gets the calibration's own terms and none of the config's.
ZERO_BANDWIDTH = {"p2p_bandwidth_gb_per_s": "0", "shard_bandwidth_gb_per_s": "0", "replicate_bandwidth_gb_per_s": "0"}
KINDS = ("p2p first", "p2p", "coll", "other")


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


class Sampler:
    """Samples the machine while a config runs: 1-minute load average and runnable count every
    0.5 s, and the overshoot of 2 ms sleeps (wake-up latency) continuously."""

    def __init__(self):
        self.load, self.runnable, self.wake = [], [], []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._sample, daemon=True),
                         threading.Thread(target=self._probe, daemon=True)]

    def __enter__(self):
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join()

    def _sample(self):
        while not self._stop.wait(0.5):
            with open("/proc/loadavg") as f:
                fields = f.read().split()
            self.load.append(float(fields[0]))
            self.runnable.append(int(fields[3].split("/")[0]))

    def _probe(self):
        while not self._stop.is_set():
            t = time.perf_counter()
            time.sleep(0.002)
            self.wake.append((time.perf_counter() - t - 0.002) * 1000)

    def figures(self):
        w = sorted(self.wake) or [0.0]
        return {"load_min": min(self.load, default=os.getloadavg()[0]),
                "load_max": max(self.load, default=os.getloadavg()[0]),
                "runnable_mean": statistics.mean(self.runnable) if self.runnable else 0.0,
                "wake_p50_ms": w[len(w) // 2], "wake_p99_ms": w[min(len(w) - 1, int(len(w) * 0.99))]}


def wait_kind(w, seen):
    """The kind of one compute wait (its cause's text): first P2P receive from its peer and
    direction in the step, later P2P, collective, other. `seen` collects the channels."""
    cause = w.get("cause") or ""
    if w.get("kind") == "p2p" or "RECV" in cause:
        chans = set(re.findall(r"(RECV_[FB])[^;}]*<-r(\d+)", cause)) or {(cause, "")}
        first = not chans <= seen
        seen |= chans
        return "p2p first" if first else "p2p"
    if "REDUCE_GRAD" in cause or "UNSHARD" in cause or w.get("kind") in ("reduce", "unshard", "collective"):
        return "coll"
    return "other"


def split_by_kind(measured, simulated):
    """Per rank: {kind: measured − simulated (ms)} and the per-wait rows, from the two documents'
    compute_waits (paired by rank and instruction index; a wait only one side lists counts 0 on
    the other)."""
    rows = {}
    for side, doc in ((0, measured), (1, simulated)):
        for w in doc.get("compute_waits", []):
            key = (w["rank"], w["index"])
            rows.setdefault(key, [0.0, 0.0, w])[side] = w["wait_ms"]
            if side == 0:
                rows[key][2] = w
    per_rank = {}
    seen = {}
    for (rank, _), (m, s, w) in sorted(rows.items()):
        kind = wait_kind(w, seen.setdefault(rank, set()))
        r = per_rank.setdefault(rank, {"split": {k: 0.0 for k in KINDS}, "waits": []})
        r["split"][kind] += m - s
        r["waits"].append((m - s, m, s, kind, w.get("text", ""), w.get("cause", "")))
    return per_rank


def figures(ppstream, cfg, steps, comm_time, issue):
    """{policy: {"step": (measured, simulated), "waits": {rank: (measured, simulated)},
    "split": {rank: ...}}} of one repeat."""
    rep = json.loads(run([ppstream, "replay", cfg, "--reduce-grad", "both", "--steps", str(steps), "--json",
                          "--comm-time", comm_time, "--issue", issue]))
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
                       "waits": waits,
                       "split": split_by_kind(rep["policies"][policy], rep["simulated"]["policies"][policy])}
    return out


def median_of(repeats):
    med = {}
    for policy in repeats[0]:
        step = tuple(statistics.median(r[policy]["step"][k] for r in repeats) for k in (0, 1))
        waits = {rank: tuple(statistics.median(r[policy]["waits"][rank][k] for r in repeats) for k in (0, 1))
                 for rank in repeats[0][policy]["waits"]}
        # The split of the repeat whose step ratio is the median one.
        order = sorted(repeats, key=lambda r: r[policy]["step"][0] / r[policy]["step"][1])
        med[policy] = {"step": step, "waits": waits, "split": order[(len(order) - 1) // 2][policy]["split"]}
    return med


def outside(m, s):
    return s == 0 or abs(m / s - 1) > 0.10


def print_config(name, np_, policy, fig, machine, doc):
    m, s = fig["step"]
    ranks = sorted(fig["waits"].items())
    bad = [(r, ms) for r, ms in ranks if outside(*ms)]
    ratios = [ms[0] / ms[1] for _, ms in ranks if ms[1]]
    worst = max(ratios, key=lambda x: abs(x - 1), default=float("nan"))
    below = [r for r, (_, ws) in ranks if 0.1 * ws < machine["wake_p99_ms"]]
    deltas = [wm - ws for _, (wm, ws) in ranks]
    print(f"{name:<40}{np_:>3}{policy:>8}{m / s:>8.3f}{m - s:>+9.1f}{len(ranks) - len(bad):>5}/{len(ranks):<3}"
          f"{worst:>8.3f}{min(deltas):>+9.1f}{max(deltas):>+8.1f}"
          f"{machine['load_min']:>7.1f}-{machine['load_max']:<5.1f}{machine['runnable_mean']:>6.1f}"
          f"{machine['wake_p50_ms']:>7.2f}{machine['wake_p99_ms']:>7.2f}")
    row = {"config": name, "processes": np_, "policy": policy, "step_ratio": m / s, "step_delta_ms": m - s,
           "ranks": len(ranks), "within": len(ranks) - len(bad), "worst_ratio": worst,
           "delta_min_ms": min(deltas), "delta_max_ms": max(deltas), "below_resolution": len(below), **machine,
           "outside": []}
    for rank, (wm, ws) in bad:
        split = fig["split"].get(rank, {"split": {}, "waits": []})
        parts = ", ".join(f"{k} {v:+.1f}" for k, v in split["split"].items() if abs(v) >= 0.05)
        top = sorted(split["waits"], key=lambda x: -abs(x[0]))[:2]
        flag = "  below resolution" if rank in below else ""
        print(f"{'':<6}r{rank}: {wm:.1f} / {ws:.1f} ms ({wm / ws if ws else float('nan'):.3f}, {wm - ws:+.1f} ms: "
              f"{parts}){flag}")
        for d, a, b, kind, text, cause in top:
            print(f"{'':<10}{d:+6.1f} ms  {a:.1f} / {b:.1f}  {kind:<9} {text} <- {cause}")
        row["outside"].append({"rank": rank, "measured_ms": wm, "simulated_ms": ws, "split_ms": split["split"],
                               "below_resolution": rank in below})
    doc["rows"].append(row)
    return len(ranks), len(ranks) - len(bad), len(below), fig["split"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ppstream", default=shutil.which("ppstream") or "ppstream")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keys", default=",".join(RUNTIME_KEYS))
    ap.add_argument("--no-calibrate", action="store_true")
    ap.add_argument("--only", nargs="*", help="run only the configs whose names start with one of these")
    ap.add_argument("--np", type=int, choices=sorted(CALIBRATION), help="run only the configs of this process count")
    ap.add_argument("--json", help="also write every figure to this file")
    ap.add_argument("--issue", choices=("ahead", "in-step"), default="in-step", help="replay's --issue")
    ap.add_argument("--comm-time", choices=("real", "model"), default="model",
                    help="replay's --comm-time (default model; real: transfers end at MPI's completion, and the "
                         "simulator gets the calibration's own zero bandwidths)")
    args = ap.parse_args()
    t_start = time.time()
    cores = len(os.sched_getaffinity(0))
    print(f"{cores} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (start)")
    doc = {"cores": cores, "calibration": {}, "rows": []}
    configs = [c for c in CONFIGS if (not args.only or any(c[0].startswith(o) for o in args.only))
               and (args.np is None or c[1] == args.np)]
    with tempfile.TemporaryDirectory() as tmp:
        keys = {}
        for np_ in sorted({c[1] for c in configs}):
            if args.no_calibrate:
                keys[np_] = {}
                continue
            label, text = CALIBRATION[np_]
            cal = os.path.join(tmp, f"calibration{np_}.yaml")
            with open(cal, "w") as f:
                f.write(text)
            out = run([args.ppstream, "replay", cal, "--calibrate"])
            keys[np_] = calibrated_keys(out, args.keys.split(","))
            # What replay still adds on average to a transfer floored at the mean, and at the key
            # written (the self-consistent floor m; absent from calibrations before it).
            excess = re.findall(r"E\[\(X - mean\)\+\][^:]*: ([0-9.]+)", out)
            floor_excess = re.findall(r"E\[\(X - m\)\+\]: ([0-9.]+)", out)
            if args.comm_time == "real":
                keys[np_].update(ZERO_BANDWIDTH)
            doc["calibration"][np_] = dict(keys[np_], excess_ms=excess, floor_excess_ms=floor_excess)
            print(f"calibrated on {label} ({np_} processes): " + ", ".join(f"{k} = {v}" for k, v in keys[np_].items()) +
                  f"; mean excess over the mean (P2P, per ring step): {', '.join(excess) or '-'} ms; over the key "
                  f"written: {', '.join(floor_excess) or '-'} ms")
        print(f"{'config':<40}{'np':>3}{'policy':>8}{'step':>8}{'+ms':>9}{'within':>9}{'worst':>8}{'wait +ms':>17}"
              f"{'load':>13}{'run':>6}{'wake50':>7}{'wake99':>7}")
        totals, made_of = {}, {k: 0.0 for k in KINDS}
        for n, (name, np_, text) in enumerate(configs):
            if text.endswith(".yaml"):
                with open(text) as f:
                    text = f.read()
            cfg = os.path.join(tmp, f"config{n}.yaml")
            with open(cfg, "w") as f:
                f.write(with_keys(text, keys[np_]))
            with Sampler() as sampler:
                med = median_of([figures(args.ppstream, cfg, args.steps, args.comm_time, args.issue) for _ in range(args.repeat)])
            machine = sampler.figures()
            for policy, fig in med.items():
                total, within, below, split = print_config(name, np_, policy, fig, machine, doc)
                t = totals.setdefault(np_, [0, 0, 0])
                t[0] += total
                t[1] += within
                t[2] += below
                for r in split.values():
                    for k, v in r["split"].items():
                        made_of[k] += abs(v)
        for np_, (total, within, below) in sorted(totals.items()):
            print(f"{np_} processes on {cores} cores ({np_ / cores:.0f} per core): {within} of {total} per-rank waits "
                  f"within 10 % of the simulator's; {below} of {total} below resolution (10 % of the simulated wait "
                  f"under the run's p99 wake-up latency)")
        whole = sum(made_of.values()) or 1.0
        print("the disagreement (sum over ranks of |measured - simulated| per kind of wait, median repeats): " +
              ", ".join(f"{k} {v:.1f} ms ({100 * v / whole:.0f} %)" for k, v in made_of.items()))
        doc["totals"] = {str(k): {"ranks": v[0], "within": v[1], "below_resolution": v[2]} for k, v in totals.items()}
        doc["made_of_ms"] = made_of
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (end); {time.time() - t_start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
