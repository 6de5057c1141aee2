#!/usr/bin/env bash
# Bounded libFuzzer run of every fuzz target (fuzz/targets.h) under ASan + UBSan, JOBS (default 2)
# targets at a time.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 15 s, all targets)
# Builds build-fuzz with clang (-DPPSTREAM_FUZZ=ON), seeds each run with fuzz/corpus/<target>
# and fuzz/regressions/<target>, and fails on the first crash, sanitizer report, timeout
# (10 s per input), RSS over 2 GiB or violated property. A failing input is left in
# $OUT_DIR (default: a temp dir, printed): keep it as fuzz/regressions/<target>/<name> so the
# test suite replays it. docs/fuzzing.md describes the longer run.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-15}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(config_yaml set_override program_text program_json chrome_json chrome_json_gz ascend_dir csv)
JOBS=${JOBS:-2}

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPSTREAM_FUZZ=ON \
  -DPPSTREAM_SANITIZE=address,undefined -DPPSTREAM_TESTS=OFF -DPPSTREAM_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$JOBS" --target $(printf 'fuzz_%s ' "${TARGETS[@]}")

OUT_DIR=${OUT_DIR:-$(mktemp -d -t ppstream-fuzz-XXXXXX)}
echo "fuzz: ${SECONDS_PER_TARGET} s per target; work and failing inputs under $OUT_DIR"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One target per core (JOBS at a time): each still gets SECONDS_PER_TARGET of one core; results
# are printed in TARGETS' order once each batch ends.
fuzz_one() {
  local t=$1 work="$OUT_DIR/$1"
  mkdir -p "$work/corpus"
  for seeds in "fuzz/corpus/$t" "fuzz/regressions/$t"; do
    [ -d "$seeds" ] && cp "$seeds"/* "$work/corpus/" 2>/dev/null || true
  done
  "./build-fuzz/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" >"$work/log" 2>&1
}
report_one() {
  local t=$1 rc=$2 work="$OUT_DIR/$1"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $t FAILED; input(s): $(ls "$work" | grep -E '^(crash|timeout|oom|leak|slow-unit)-' | tr '\n' ' ')"
    grep -E "ERROR|property violated|runtime error|SUMMARY" "$work/log" | head -5
    status=1
  else
    echo "fuzz: $t ok ($(grep -m1 -oE 'stat::number_of_executed_units: *[0-9]+' "$work/log" | grep -oE '[0-9]+$') runs)"
  fi
}
status=0
for ((i = 0; i < ${#TARGETS[@]}; i += JOBS)); do
  batch=("${TARGETS[@]:i:JOBS}")
  pids=()
  for t in "${batch[@]}"; do
    fuzz_one "$t" &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    rc=0
    wait "${pids[$k]}" || rc=$?
    report_one "${batch[$k]}" "$rc"
  done
done
[ "$status" -ne 0 ] || [ -n "${KEEP_FUZZ_DIR:-}" ] || rm -rf "$OUT_DIR"
exit "$status"
