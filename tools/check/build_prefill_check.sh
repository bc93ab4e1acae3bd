#!/usr/bin/env bash
# build_prefill_check.sh: compile tools/check/prefill_check.cu once per representative config of
# templates/attention/prefill.cuh into build/check/prefill_<tag>.
#   usage (from anywhere): tools/check/build_prefill_check.sh [-j N]
# PREFILL_CONFIGS (same 8-column lines as CONFIGS below) replaces the default list, e.g.
#   PREFILL_CONFIGS="128 1 128 64 4 2 1 1" tools/check/build_prefill_check.sh
# Each binary's nvcc/ptxas report goes to build/check/log/prefill_<tag>.txt.
# Tag: d<HEAD_DIM><c|f> m<BLOCK_M> n<BLOCK_N> w<WARPS> s<STAGES> x<SWIZZLE> k<SCHED>  (c causal, f full)
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS=4
if [[ "${1:-}" == "-j" ]]; then JOBS="$2"; fi
NVCC="${NVCC:-nvcc}"
OUTDIR=build/check
mkdir -p "$OUTDIR/log"

#        D   causal BM  BN  W  ST SW SCHED
CONFIGS="
        128  0      128 64  4  2  1  0
        128  0      128 64  4  1  0  0
        128  0      64  64  4  3  0  0
        128  0      128 128 8  2  1  0
        128  1      128 64  4  2  1  2
        128  1      128 64  8  2  1  1
        128  1      128 32  8  1  0  0
        64   0      128 64  4  2  1  0
        64   0      128 128 8  2  1  0
        64   1      64  32  4  3  1  1
"
CONFIGS="${PREFILL_CONFIGS:-$CONFIGS}"

build_one() {
  local D=$1 C=$2 BM=$3 BN=$4 W=$5 ST=$6 SW=$7 SC=$8
  local cf; if [[ $C == 1 ]]; then cf=c; else cf=f; fi
  local tag="d${D}${cf}_m${BM}n${BN}w${W}s${ST}x${SW}k${SC}"
  local out="$OUTDIR/prefill_${tag}" log="$OUTDIR/log/prefill_${tag}.txt"
  if "$NVCC" -arch=sm_90 -O3 -std=c++17 -lineinfo -I templates \
      -DBLOCK_M=$BM -DBLOCK_N=$BN -DWARPS=$W -DSTAGES=$ST -DSWIZZLE=$SW -DSCHED=$SC \
      -DHEAD_DIM=$D -DIS_CAUSAL=$C -Xptxas -v -o "$out" tools/check/prefill_check.cu \
      > "$log" 2>&1; then
    local res; res=$(grep -A3 "Compiling entry function 'attn_prefill'" "$log" | grep -E 'registers|spill' | sed 's/ptxas info *: //' | tr -s ' ' | tr '\n' ' ')
    echo "built $out :$res"
  else
    echo "FAILED $out (see $log)"; cat "$log"; return 1
  fi
}
export -f build_one
export NVCC OUTDIR
echo "$CONFIGS" | grep -v '^\s*$' | xargs -P "$JOBS" -L 1 bash -c 'build_one "$@"' _
