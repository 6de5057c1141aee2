#!/usr/bin/env bash
# One command for an 8-NPU Ascend node: the two 8-card layouts (PP2/VPP2 x FSDP over 4, and
# PP2/VPP2 x HSDP 2x2), each trained with the inline and the async stage reduction under
# MindSpore's profiler, then `ppstream analyze` of every async run (the evidence table: each
# stage's BWD_SEND batch issued before its reduction ends, the reduction's overlap with compute,
# step time) and `ppstream diff` inline vs async. Runs end to end on CPU too (--device cpu, as CI
# does), so nothing but the device choice is untested off Ascend.
#
#   scripts/ascend_smoke.sh [--device ascend|cpu|auto] [--out DIR] [--steps N] [--timeout S]
#                           [--set KEY=VALUE ...]
# Exit: 0 all runs and analyses succeeded; the first failing command's exit code otherwise.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEVICE=ascend OUT=out/ascend_smoke STEPS=5 TIMEOUT=900
SETS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) DEVICE="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --set) SETS+=(--set "$2"); shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "ascend_smoke.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
PPSTREAM="${PPSTREAM:-}"
if [[ -z "$PPSTREAM" ]]; then
  if [[ -x "$ROOT/.venv/bin/ppstream" ]]; then PPSTREAM="$ROOT/.venv/bin/ppstream"; else PPSTREAM=ppstream; fi
fi
mkdir -p "$OUT"
declare -A CONFIGS=([fsdp4]=examples/small-pp2-vpp2-fsdp4-train.yaml [hsdp2x2]=examples/small-pp2-vpp2-hsdp-train.yaml)
for layout in fsdp4 hsdp2x2; do  # every run first, so one failing analysis loses no run
  for policy in inline async; do
    echo "== $layout $policy: ppstream train (--profile, $STEPS steps, device $DEVICE) =="
    "$PPSTREAM" train "$ROOT/${CONFIGS[$layout]}" --device "$DEVICE" --reduce-grad "$policy" --profile \
      --steps "$STEPS" --timeout "$TIMEOUT" --out "$OUT/$layout-$policy" ${SETS[@]+"${SETS[@]}"}
  done
done
for layout in fsdp4 hsdp2x2; do
  echo "== $layout: ppstream analyze (async run directory: host traces and profiler output) =="
  "$PPSTREAM" analyze "$OUT/$layout-async" | tee "$OUT/$layout-async.analyze.txt"
  echo "== $layout: ppstream analyze (async, MindSpore profiler output) =="
  "$PPSTREAM" analyze "$OUT/$layout-async/profile" | tee "$OUT/$layout-async.profile.txt"
  echo "== $layout: ppstream diff inline async (run directories) =="
  "$PPSTREAM" diff "$OUT/$layout-inline" "$OUT/$layout-async" | tee "$OUT/$layout.diff.txt"
done
echo "ascend_smoke.sh: done; reports in $OUT/*.txt"
