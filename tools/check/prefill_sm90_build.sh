#!/usr/bin/env bash
# prefill_sm90_build.sh: compile tools/check/prefill_sm90_check.cu once per config of
# templates/attention/prefill_sm90.cuh into $OUTDIR/prefill_sm90_<tag> (default build/check).
#   usage: tools/check/prefill_sm90_build.sh [-j N]
# PREFILL_SM90_CONFIGS (same 12- to 15-column lines as CONFIGS below; PERSISTENT defaults to 0, MIN_BLOCKS to 1,
# LEAN_PRODUCER to 0)
# replaces the default list, e.g.
#   PREFILL_SM90_CONFIGS="128 1 128 2 2 1 1 4 0 1 1 0" tools/check/prefill_sm90_build.sh
# Built with -gencode arch=compute_90a,code=sm_90a (nvcc 13's -arch=sm_90a also embeds compute_90
# PTX, which cannot hold wgmma). Each binary's nvcc/ptxas report goes to
# $OUTDIR/log/prefill_sm90_<tag>.txt; the line printed per binary gives registers, spills, a
# WGMMA-SERIALIZED flag when ptxas serialized the wgmma, and the HGMMA count when cuobjdump is on PATH.
# Tag: d<D><c|f> n<BLOCK_N> c<CONSUMERS> s<STAGES> o<OVERLAP> k<SCHED> p<PRODUCER_WARPS> v<PV_SPLIT>
#      r<SETMAXNREG> g<PINGPONG> t<USE_TMA> e<PERSISTENT> b<MIN_BLOCKS> l<LEAN_PRODUCER>
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS=4
if [[ "${1:-}" == "-j" ]]; then JOBS="$2"; fi
NVCC="${NVCC:-nvcc}"
OUTDIR="${OUTDIR:-build/check}"
mkdir -p "$OUTDIR/log"

#        D   causal BN  CONS ST OV SCHED PW PVSPLIT SETMAXNREG PINGPONG TMA [PERSISTENT [MIN_BLOCKS [LEAN_PRODUCER]]]
CONFIGS="
        128  0      128 2    2  1  0     4  0       1          0        0
        128  0      128 2    2  1  0     4  0       1          1        0
        128  0      128 2    2  0  0     4  0       1          0        0
        128  0      176 2    2  1  0     4  0       1          1        0
        128  0      128 2    2  1  0     4  1       1          0        0
        128  0      128 2    2  1  0     1  0       1          0        0
        128  1      128 2    2  1  2     4  0       1          0        0
        128  1      128 2    2  1  2     4  0       1          1        0
        128  1      128 2    2  1  1     4  0       1          0        0
        128  1      64  2    3  1  2     4  0       1          0        0
        128  1      64  2    3  1  2     4  1       1          1        0
        128  1      128 1    2  1  2     4  0       0          0        0
        64   0      128 2    2  1  0     4  0       1          0        0
        64   0      128 3    2  1  0     4  0       1          1        0
        64   1      128 2    2  1  2     4  0       1          1        0
        128  0      128 2    2  1  0     4  0       1          1        1
        128  1      128 2    2  1  2     4  0       1          1        1
        64   0      128 3    2  1  0     4  0       1          1        1
"
CONFIGS="${PREFILL_SM90_CONFIGS:-$CONFIGS}"

build_one() {
  local D=$1 C=$2 BN=$3 CO=$4 ST=$5 OV=$6 SC=$7 PW=$8 PS=$9 RG=${10} PP=${11} TM=${12} PE=${13:-0} MB=${14:-1} LP=${15:-0}
  local cf; if [[ $C == 1 ]]; then cf=c; else cf=f; fi
  local tag="d${D}${cf}_n${BN}c${CO}s${ST}o${OV}k${SC}p${PW}v${PS}r${RG}g${PP}t${TM}e${PE}b${MB}l${LP}"
  local out="$OUTDIR/prefill_sm90_${tag}" log="$OUTDIR/log/prefill_sm90_${tag}.txt"
  if "$NVCC" -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -lineinfo -I templates \
      -DBLOCK_N=$BN -DCONSUMERS=$CO -DSTAGES=$ST -DOVERLAP=$OV -DSCHED=$SC -DPRODUCER_WARPS=$PW \
      -DPV_SPLIT=$PS -DSETMAXNREG=$RG -DPINGPONG=$PP -DUSE_TMA=$TM -DPERSISTENT=$PE -DMIN_BLOCKS=$MB -DLEAN_PRODUCER=$LP -DHEAD_DIM=$D -DIS_CAUSAL=$C -Xptxas -v -o "$out" \
      tools/check/prefill_sm90_check.cu > "$log" 2>&1; then
    local res hg=""
    res=$(grep -A3 "Compiling entry function 'attn_prefill_sm90'" "$log" | grep -E 'registers|spill' | sed 's/ptxas info *: //' | tr -s ' ' | tr '\n' ' ')
    if command -v cuobjdump > /dev/null; then
      hg=" HGMMA x$(cuobjdump -sass -fun attn_prefill_sm90 "$out" 2>/dev/null | grep -c HGMMA || true)"
    fi
    if grep -q "Potential Performance Loss" "$log"; then res="$res WGMMA-SERIALIZED (see log)"; fi
    echo "built $out :$res$hg"
  else
    echo "FAILED $out (see $log)"; tail -20 "$log"; return 1
  fi
}
export -f build_one
export NVCC OUTDIR
echo "$CONFIGS" | grep -v '^\s*$' | xargs -P "$JOBS" -L 1 bash -c 'build_one "$@"' _
