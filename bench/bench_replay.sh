#!/usr/bin/env bash
# replay's benchmark (docs/replay.md, "Bench"): the measured-vs-simulated table of the scaled
# seed example (inline and async) with the issue's acceptance figures, replay's per-instruction
# overhead (µs) on the same programs with every cost at zero, then the 12 agreement configs
# (bench/replay_agreement.py). Prints; asserts nothing. PPSTREAM=path/to/ppstream to choose.
set -euo pipefail
cd "$(dirname "$0")/.."
PP=${PPSTREAM:-ppstream}
CFG=examples/replay-seed-scaled.yaml
echo "== $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (replay's figures are only as good as the machine is quiet)"
echo "== measured vs simulated: $CFG"
"$PP" replay "$CFG" --reduce-grad both --steps 5 --json | python3 bench/replay_table.py
echo "== per-instruction overhead (every cost zero)"
ZERO=()
for k in forward_ms_per_layer backward_ms_per_layer moe_dispatch_ms_per_layer moe_combine_ms_per_layer optimizer_ms \
         p2p_latency_ms collective_alpha_ms p2p_bandwidth_gb_per_s shard_bandwidth_gb_per_s replicate_bandwidth_gb_per_s; do ZERO+=(--set "cost.$k=0"); done
"$PP" replay "$CFG" --reduce-grad both --json "${ZERO[@]}" --set straggler.tails=[] | python3 bench/replay_table.py --zero-cost
echo "== measured vs simulated: the 12 agreement configs"
python3 bench/replay_agreement.py --ppstream "$(command -v "$PP")"
