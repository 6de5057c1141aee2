"""The what-if's prediction on real concurrency (issue 22, "Done when"; docs/whatif.md "Our
traces"): per config, `ppstream replay CONFIG --reduce-grad inline --trace DIR` with a straggler
tail, then `ppstream whatif DIR --reduce-grad async`, beside what `ppstream replay CONFIG
--reduce-grad async` then measures (the median of 3 steps each). Prints the inline step, the
predicted async step, the measured async step and the prediction's error; the whatif's own
re-simulation error of the inline trace (launch delays are not lifted). Asserts nothing; exits 0
unless a run fails. Configs: tests/python/replay/replay_configs.py's generator.

    python3 bench/whatif_replay_prediction.py [--ppstream PATH] [--steps N]
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
from replay_configs import config_text  # noqa: E402


def tail(pp_rank):
    return f"""straggler:
  tails:
    - {{pp_rank: {pp_rank}, dp_index: 1, delay_ms: 40, collectives: [reduce_grad]}}
"""


HSDP = dict(mode="hsdp", shard=2, replicate=2)
# Interleaved and not, FSDP and HSDP, tails on different PP ranks; 8 processes each at most.
CONFIGS = {
    "1f1b-fsdp-pp2-tail1": dict(straggler=tail(1)),
    "1f1b-hsdp-pp2-tail0": dict(transport="multi_stream", straggler=tail(0), **HSDP),
    "1f1b-fsdp-pp4-tail2": dict(pp=4, mb=8, straggler=tail(2)),
    "interleaved-fsdp-pp2-tail1": dict(schedule="interleaved_1f1b", vpp=2, transport="multi_stream", straggler=tail(1)),
    "interleaved-hsdp-pp2-tail1": dict(schedule="interleaved_1f1b", vpp=2, transport="multi_stream",
                                       straggler=tail(1), **HSDP),
    "interleaved-fsdp-pp4-tail3": dict(schedule="interleaved_1f1b", vpp=2, pp=4, mb=8, layers=16,
                                       transport="multi_stream", straggler=tail(3)),
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p.stdout


def replay_step(ppstream, cfg, policy, steps, trace=None):
    cmd = [ppstream, "replay", cfg, "--reduce-grad", policy, "--steps", str(steps), "--json"]
    if trace:
        cmd += ["--trace", trace]
    return json.loads(run(cmd))["policies"][policy]["step_time_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ppstream", default=shutil.which("ppstream") or "ppstream")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'config':<30}{'inline':>10}{'predicted':>11}{'async':>10}{'error':>8}{'resim err':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw in CONFIGS.items():
            cfg = os.path.join(tmp, name + ".yaml")
            with open(cfg, "w") as f:
                f.write(config_text(policy="inline", **kw))
            trace = os.path.join(tmp, name)
            os.makedirs(trace)
            inline_ms = replay_step(args.ppstream, cfg, "inline", args.steps, trace)
            w = json.loads(run([args.ppstream, "whatif", trace, "--reduce-grad", "async", "--json"]))
            predicted = w["predicted_step_ms"]["measured_costs_ms"]
            async_ms = replay_step(args.ppstream, cfg, "async", args.steps)
            err = (predicted - async_ms) / async_ms
            print(f"{name:<30}{inline_ms:>10.1f}{predicted:>11.1f}{async_ms:>10.1f}{100 * err:>7.1f}%"
                  f"{100 * w['max_resim_error']:>10.1f}%")


if __name__ == "__main__":
    main()
