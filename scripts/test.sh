#!/usr/bin/env bash
# Runs every test: the C++ suite under AddressSanitizer + UBSan (GoogleTest via ctest), a
# bounded fuzz run of every reader (scripts/fuzz.sh, clang + libFuzzer), then the Python suite
# (pytest, through the installed ppstream._core). Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
. scripts/ccache_env.sh

echo "== C++ tests (ASan + UBSan) =="
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPPSTREAM_SANITIZE=address,undefined -DPPSTREAM_BENCH=OFF >/dev/null
cmake --build build-asan -j"$JOBS"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout 600

echo "== Fuzz (libFuzzer, ASan + UBSan; FUZZ_SECONDS per target, 0 skips) =="
# FUZZ_TARGETS="" (or unset) runs every target.
FUZZ_TARGETS=${FUZZ_TARGETS-config_yaml set_override program_text program_json chrome_json chrome_json_gz ascend_dir csv}
if [ "${FUZZ_SECONDS:-15}" -gt 0 ]; then
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-15}" $FUZZ_TARGETS
fi

echo "== replay and the parallel trace reader under ThreadSanitizer (docs/replay.md, docs/analyze.md) =="
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPPSTREAM_SANITIZE=thread -DPPSTREAM_TESTS=OFF -DPPSTREAM_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$JOBS" --target ppstream-replay ppstream  # replay's worker; analyze's reader threads; simulate's trial runner
TSAN_TRACES=$(mktemp -d)
# The parallel trace reader (docs/analyze.md "Cluster scale"): 6 ranks on 2 threads.
python3 scripts/make_trace_set.py --ranks 6 --out "$TSAN_TRACES/set" >/dev/null
TSAN_OPTIONS="halt_on_error=1 exitcode=66" PPSTREAM_THREADS=2 build-tsan/ppstream analyze "$TSAN_TRACES/set" --json >/dev/null
rm -rf "$TSAN_TRACES/set"
TSAN_OPTIONS="suppressions=$PWD/scripts/tsan-openmpi.supp halt_on_error=1 exitcode=66" \
  build-tsan/ppstream-replay --set pipeline_parallel_size=2 --set num_layers=4 --set micro_batch_num=4 \
  --set data_parallel.mode=fsdp --set data_parallel.shard_size=2 --reduce-grad both --timeout 120 \
  --steps 2 --trace "$TSAN_TRACES" >/dev/null
TSAN_OPTIONS="suppressions=$PWD/scripts/tsan-openmpi.supp halt_on_error=1 exitcode=66" \
  build-tsan/ppstream-replay --set pipeline_parallel_size=2 --set num_layers=4 --set micro_batch_num=4 \
  --set data_parallel.mode=hsdp --set data_parallel.shard_size=1 --set data_parallel.replicate_size=2 \
  --compute gemm --gemm-n 16 --timeout 120 >/dev/null
rm -rf "$TSAN_TRACES"
echo "== simulate's parallel trial runner under ThreadSanitizer (include/ppstream/sim/trials.h) =="
TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
  build-tsan/ppstream simulate examples/small-pp2-vpp2-hsdp.yaml --cluster --reduce-grad both --trials 6 --threads 2 \
  --quiet --set 'straggler.distribution={kind: lognormal, median_ms: 1}' >/dev/null

echo "== Python tests =="
.venv/bin/python -m pytest -q --durations=25 tests/python "$@"
