#!/usr/bin/env bash
# compile_prefill_space.sh: compile every config of recipes/attention/prefill.lua's space with nvcc
# (-arch=sm_90 -cubin -Xptxas -v, the template alone, as NVRTC gets it) for each compile-time problem
# set the recipe's problems use, and print registers and spills per config. No GPU needed.
#   usage: tools/check/compile_prefill_space.sh [-j N] [--d64-causal]
# The space mirrors the recipe: BLOCK_M {64,128} x BLOCK_N {32,64,128} x WARPS {4,8} x STAGES {1,2,3}
# x SWIZZLE {0,1} x SCHED {0,1,2}, constraints BLOCK_M % (16*WARPS) == 0 and
# (BLOCK_M / (16*WARPS)) * BLOCK_N <= 128 (144 configs), then per problem set the recipe's applies():
# SCHED 0 only when not causal, shared memory <= 227 KiB. Define sets: D128 full, D128 causal, D64 full
# (--d64-causal adds D64 causal, used by no recipe problem). Output: build/check/space/*.txt and a table.
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS=4; SETS="128:0 128:1 64:0"
while [[ $# -gt 0 ]]; do
  case "$1" in
    -j) JOBS="$2"; shift 2 ;;
    --d64-causal) SETS="$SETS 64:1"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
NVCC="${NVCC:-nvcc}"
OUTDIR=build/check/space
mkdir -p "$OUTDIR"
printf '#include "attention/prefill.cuh"\n' > "$OUTDIR/prefill_tu.cu"

list=""
for set in $SETS; do
  D=${set%:*}; C=${set#*:}
  for BM in 64 128; do for BN in 32 64 128; do for W in 4 8; do for ST in 1 2 3; do for SW in 0 1; do for SC in 0 1 2; do
    (( BM % (16 * W) == 0 )) || continue
    (( (BM / (16 * W)) * BN <= 128 )) || continue
    (( C == 1 || SC == 0 )) || continue
    pitch=$(( D + (SW == 1 ? 0 : 8) ))
    (( (BM + 2 * ST * BN) * pitch * 2 <= 227 * 1024 )) || continue
    list+="$D $C $BM $BN $W $ST $SW $SC"$'\n'
  done; done; done; done; done; done
done

compile_one() {
  local D=$1 C=$2 BM=$3 BN=$4 W=$5 ST=$6 SW=$7 SC=$8
  local tag="d${D}c${C}_m${BM}n${BN}w${W}s${ST}x${SW}k${SC}"
  local log="$OUTDIR/$tag.txt"
  if "$NVCC" -arch=sm_90 -std=c++17 -I templates -cubin -Xptxas -v -o "$OUTDIR/$tag.cubin" \
      -DBLOCK_M=$BM -DBLOCK_N=$BN -DWARPS=$W -DSTAGES=$ST -DSWIZZLE=$SW -DSCHED=$SC \
      -DHEAD_DIM=$D -DIS_CAUSAL=$C "$OUTDIR/prefill_tu.cu" > "$log" 2>&1; then
    local regs st ld
    regs=$(grep -oE 'Used [0-9]+ registers' "$log" | grep -oE '[0-9]+')
    st=$(grep -oE '[0-9]+ bytes spill stores' "$log" | grep -oE '^[0-9]+')
    ld=$(grep -oE '[0-9]+ bytes spill loads' "$log" | grep -oE '^[0-9]+')
    printf 'ok   %-28s regs %3s spill_st %4s spill_ld %4s\n' "$tag" "$regs" "$st" "$ld"
  else
    printf 'FAIL %-28s see %s\n' "$tag" "$log"
  fi
  rm -f "$OUTDIR/$tag.cubin"
}
export -f compile_one
export NVCC OUTDIR
echo -n "$list" | xargs -P "$JOBS" -L 1 bash -c 'compile_one "$@"' _ | sort -k2 | tee "$OUTDIR/summary.txt"
n=$(wc -l < "$OUTDIR/summary.txt"); f=$(grep -c '^FAIL' "$OUTDIR/summary.txt" || true)
s=$(awk '$1 == "ok" && ($6 > 0 || $8 > 0)' "$OUTDIR/summary.txt" | wc -l)
echo "summary: $n compiled, $f failed, $s with spills (table: $OUTDIR/summary.txt)"
[[ $f == 0 ]]
