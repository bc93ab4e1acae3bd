#!/usr/bin/env bash
# run_prefill_check.sh: run every build/check/prefill_* binary (tools/check/build_prefill_check.sh)
# on each problem and print one line per (binary, problem):
#   PASS|FAIL|SKIP  config | problem | rel_l2 max_abs nan | regs local smem | median ms  TFLOP/s
#   usage: tools/check/run_prefill_check.sh [iters]
# Problems ("B HQ HKV S", D is compiled into each binary) can be replaced with PROBLEMS, e.g.
#   PROBLEMS="1 2 2 256;4 32 8 4096" tools/check/run_prefill_check.sh
# The small default problem is GQA (HQ 4 over HKV 2) with B 2, so batch and kv-head indexing are checked.
# Exit status: 0 when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
ITERS="${1:-20}"
PROBLEMS="${PROBLEMS:-2 4 2 256;4 32 32 4096}"
fails=0; passes=0; skips=0
IFS=';' read -ra PLIST <<< "$PROBLEMS"
for bin in build/check/prefill_*; do
  [[ -f "$bin" && -x "$bin" ]] || continue
  for p in "${PLIST[@]}"; do
    # shellcheck disable=SC2086
    "$bin" $p "$ITERS"
    rc=$?
    case $rc in
      0) passes=$((passes + 1)) ;;
      2) skips=$((skips + 1)) ;;
      *) fails=$((fails + 1)); echo "FAIL  $(basename "$bin") $p (exit $rc)" ;;
    esac
  done
done
echo "summary: $passes pass, $fails fail, $skips skip"
[[ $fails == 0 ]]
