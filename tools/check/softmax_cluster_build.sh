#!/usr/bin/env bash
# softmax_cluster_build.sh: compile tools/check/softmax_cluster_check.cu for a representative set of
# templates/softmax/softmax.cuh configurations (the CLUSTER and ROWS variants, and the 2026-11-22
# recording's winners as baselines), one binary each: $DIR/softmax_cluster_<tag>, plus $DIR/
# softmax_cluster_list.txt (tag and rows of each, read by softmax_cluster_run.sh). Every config lies
# in recipes/softmax.lua's space (its constraints and applies hold for the problem named).
# Usage: tools/check/softmax_cluster_build.sh [tag...]   (no tag: all)
# env: NVCC (default nvcc), ARCH (default sm_90a), DIR (default build/check). Needs no GPU.
# Linked with the shared cudart (small binaries to carry; the GPU machine has /usr/local/cuda/lib64).
# Registers and spills of each kernel: $DIR/softmax_cluster_<tag>.ptxas.txt and one summary line.
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
ARCH=${ARCH:-sm_90a}
DIR=${DIR:-build/check}
mkdir -p "$DIR"

# tag             rows   defines (CACHE_ROW=1 ONLINE=1 for all)
CONFIGS=(
  "c32768_base    1024  COLS=32768  ROW_MODE=1 BLOCK=512  VEC_BYTES=16 EXP_ONCE=1 PERSIST=1"  # recorded best r1024c32768
  "c32768_k2_b512 1024  COLS=32768  ROW_MODE=1 BLOCK=512  VEC_BYTES=16 EXP_ONCE=1 CLUSTER=2"
  "c32768_k4_b256 1024  COLS=32768  ROW_MODE=1 BLOCK=256  VEC_BYTES=16 EXP_ONCE=1 CLUSTER=4"
  "c32768_k4_b512 1024  COLS=32768  ROW_MODE=1 BLOCK=512  VEC_BYTES=8  EXP_ONCE=1 CLUSTER=4"
  "c32768_k4_hint 1024  COLS=32768  ROW_MODE=1 BLOCK=256  VEC_BYTES=16 EXP_ONCE=1 CLUSTER=4 X_HINT=1"
  "c32768_k8_b256 1024  COLS=32768  ROW_MODE=1 BLOCK=256  VEC_BYTES=8  EXP_ONCE=1 CLUSTER=8"
  "c32768_k8_e0   1024  COLS=32768  ROW_MODE=1 BLOCK=128  VEC_BYTES=16 EXP_ONCE=0 CLUSTER=8"
  "c131072_k8     256   COLS=131072 ROW_MODE=1 BLOCK=1024 VEC_BYTES=16 EXP_ONCE=1 CLUSTER=8"
  "c131072_k8_r64 64    COLS=131072 ROW_MODE=1 BLOCK=1024 VEC_BYTES=16 EXP_ONCE=1 CLUSTER=8"
  "c8192_k2       4096  COLS=8192   ROW_MODE=1 BLOCK=256  VEC_BYTES=8  EXP_ONCE=1 CLUSTER=2"
  "c1024_base     16384 COLS=1024   ROW_MODE=0 BLOCK=128  VEC_BYTES=16 EXP_ONCE=1"              # near the recorded best r16384c1024
  "c1024_hint     16384 COLS=1024   ROW_MODE=0 BLOCK=128  VEC_BYTES=16 EXP_ONCE=1 X_HINT=1"
  "c1024_r2       16384 COLS=1024   ROW_MODE=0 BLOCK=128  VEC_BYTES=16 EXP_ONCE=1 ROWS=2"
  "c1024_r4       16384 COLS=1024   ROW_MODE=0 BLOCK=128  VEC_BYTES=16 EXP_ONCE=1 ROWS=4"
  "c1024_r2_b256  16384 COLS=1024   ROW_MODE=0 BLOCK=256  VEC_BYTES=8  EXP_ONCE=1 ROWS=2 X_HINT=1"
)

want=" $* "
: > "$DIR/softmax_cluster_list.txt"
for line in "${CONFIGS[@]}"; do
  read -r tag rows defs <<<"$line"
  defs=${defs%%#*}
  if [ $# -gt 0 ] && [[ "$want" != *" $tag "* ]]; then continue; fi
  dflags="-DCACHE_ROW=1 -DONLINE=1"
  for d in $defs; do dflags+=" -D$d"; done
  # shellcheck disable=SC2086
  "$NVCC" -O3 -std=c++17 -cudart shared -arch="$ARCH" -Itemplates $dflags -Xptxas -v \
    tools/check/softmax_cluster_check.cu -o "$DIR/softmax_cluster_$tag" 2>"$DIR/softmax_cluster_$tag.ptxas.txt" || {
    cat "$DIR/softmax_cluster_$tag.ptxas.txt" >&2
    echo "build of $tag failed" >&2
    exit 1
  }
  regs=$(grep -o "Used [0-9]* registers" "$DIR/softmax_cluster_$tag.ptxas.txt" | head -1)
  spill=$(grep -o "[0-9]* bytes spill stores" "$DIR/softmax_cluster_$tag.ptxas.txt" | head -1)
  echo "$tag: $regs, $spill"
  echo "$tag $rows" >> "$DIR/softmax_cluster_list.txt"
done
