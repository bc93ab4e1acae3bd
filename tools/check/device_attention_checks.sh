#!/usr/bin/env bash
# device_attention_checks.sh: one device call that checks and times the attention kernels built by
# tools/check/build_decode_check.sh and prefill_sm90_build.sh (binaries in build/check), after the
# gpu-labelled ctest suite. Logs under $OUT (or /tmp/attn-checks); a short table last.
#   usage (on the GPU machine, repo root, build/ carried): tools/check/device_attention_checks.sh [--no-ctest]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/attn-checks}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-/usr/local/cuda/lib64}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/gpu.txt" 2>&1
date -u +%FT%TZ >> "$OUT/gpu.txt"
if [[ "${1:-}" != "--no-ctest" ]]; then
  timeout 300 ctest --test-dir build -L gpu --output-on-failure > "$OUT/ctest_gpu.txt" 2>&1
  echo "ctest -L gpu: exit $?  $(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.txt")"
fi
tools/check/run_decode_check.sh --iters 50 > "$OUT/decode.txt" 2>&1
PROBLEMS="2 4 2 1000;1 2 1 77;16 16 16 1024;4 32 32 4096" RUN_TIMEOUT=60 \
  tools/check/prefill_sm90_run.sh 30 > "$OUT/prefill_sm90.txt" 2>&1
cat "$OUT/gpu.txt"
echo "== decode (PASS/FAIL tag problem ... kv GB/s)"; grep -E '^(PASS|FAIL)' "$OUT/decode.txt" | grep -v missing | cut -c1-160
echo "== prefill_sm90"; grep -E '^(PASS|FAIL)|summary' "$OUT/prefill_sm90.txt" | grep -E '1024|4096|FAIL|summary' | cut -c1-200
