#!/usr/bin/env bash
# Writes `simulate --json` of every examples/*.yaml under several modes into OUTDIR, one file
# per (example, mode), so that two builds can be compared byte for byte:
#
#   bench/sim_outputs.sh build-before/ppstream /tmp/before
#   bench/sim_outputs.sh build-rel/ppstream /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
#
# Modes: the config as written (every platform profile, --reduce-grad both), --trials 20,
# --cluster and --cluster --trials 4 (examples over 1,024 ranks run their cluster modes with
# data_parallel.replicate_size=4, so the check stays minutes, not hours), each with --threads 2.
# A run that fails writes its exit status and stderr instead, so a changed error is a difference too.
set -u -o pipefail
bin=$1
out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
run() {  # NAME ARGS...
  local name=$1
  shift
  # engine_wall_ms is a wall-clock measurement, the one figure that differs between runs.
  if ! "$bin" simulate "$@" --json --quiet --threads 2 2>"$out/$name.err" | sed "/\"engine_wall_ms\"/d" >"$out/$name.json"; then
    echo "exit $?" >>"$out/$name.err"
  fi
}
for cfg in "$here"/examples/*.yaml; do
  base=$(basename "$cfg" .yaml)
  # DP examples: both policies; the others the config's own.
  both=()
  grep -q '^ *mode: *[hf]sdp' "$cfg" && both=(--reduce-grad both)
  for platform in ascend-mindspore ascend-mindspore-one-comm-stream cpu-serial; do
    run "$base.$platform" "$cfg" "${both[@]}" --platform "$platform"
  done
  run "$base.trials20" "$cfg" "${both[@]}" --trials 20 --seed 3
  small=()
  grep -q 'replicate_size: *128' "$cfg" && small=(--set data_parallel.replicate_size=4)
  run "$base.cluster" "$cfg" --cluster "${small[@]}"
  run "$base.cluster.one-comm" "$cfg" --cluster --platform ascend-mindspore-one-comm-stream "${small[@]}"
  run "$base.cluster.trials4" "$cfg" "${both[@]}" --cluster --trials 4 "${small[@]}"
done
