#!/usr/bin/env bash
# prefill_sm90_run.sh: run every $OUTDIR/prefill_sm90_* binary (tools/check/prefill_sm90_build.sh)
# on each problem and print one line per (binary, problem):
#   PASS|FAIL  config | problem | rel_l2 max_abs nan | regs local smem | median ms  TFLOP/s
#   usage: tools/check/prefill_sm90_run.sh [iters]
# Problems ("B HQ HKV S", D is compiled into each binary) can be replaced with PROBLEMS. The default
# small problems are GQA (HQ 4 over HKV 2), B 2, with S not a multiple of any tile (1000) and S
# below one tile (77), so batch, kv-head indexing, the key tail and the row tail are all checked.
# RUN_TIMEOUT: seconds per (binary, problem) run (default 120); a run past it is a FAIL (exit 124).
# Exit status: 0 when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
ITERS="${1:-20}"
OUTDIR="${OUTDIR:-build/check}"
PROBLEMS="${PROBLEMS:-2 4 2 256;2 4 2 1000;1 2 1 77;4 32 32 4096}"
fails=0; passes=0; skips=0
IFS=';' read -ra PLIST <<< "$PROBLEMS"
for bin in "$OUTDIR"/prefill_sm90_*; do
  [[ -f "$bin" && -x "$bin" ]] || continue
  for p in "${PLIST[@]}"; do
    # shellcheck disable=SC2086
    timeout "${RUN_TIMEOUT:-120}" "$bin" $p "$ITERS"
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
