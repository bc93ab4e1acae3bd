#!/usr/bin/env bash
# gemm_tma_check.sh: build and run tools/check/gemm_tma_check.cu for a few TMA configurations of
# templates/gemm/gemm.cuh (all in recipes/gemm.lua's space) on the problems below: a smoke test of
# the TMA path before a tune run (needs a GPU to run; builds anywhere with nvcc).
# Usage: tools/check/gemm_tma_check.sh [--build-only]   env: NVCC, ARCH (sm_90a), OUT (build/check),
#   GEMM_TMA_CONFIGS / GEMM_TMA_CASES (lines as in the lists below, replacing them)
# Per binary: ptxas registers/spills and its SASS counts (tools/check/gemm_sass.sh); per case: a PASS|FAIL line.
# Exit status: number of failed builds and cases.
set -uo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
ARCH=${ARCH:-sm_90a}
OUT=${OUT:-build/check}
mkdir -p "$OUT"
# tag                    BLOCK_M BLOCK_N CONSUMERS STAGES PERSISTENT RASTER B_COL [WS: 1 cooperative, 2 ping-pong]
CONFIGS=(
  "t128x256c2s4p1r8_col  128 256 2 4 1 8 1"
  "t128x256c2s4p1r8_row  128 256 2 4 1 8 0"
  "t256x128c2s4p0r1_col  256 128 2 4 0 1 1"
  "t128x128c1s5p1r8_row  128 128 1 5 1 8 0"
)
# tag                    M    N     K
CASES=(
  "t128x256c2s4p1r8_col  4096 4096  4096"
  "t128x256c2s4p1r8_col  4000 4096  4096"
  "t128x256c2s4p1r8_row  4096 14336 4096"
  "t128x256c2s4p1r8_row  4000 4096  4096"
  "t256x128c2s4p0r1_col  4096 4096  4096"
  "t128x128c1s5p1r8_row  4096 4096  4096"
  "t128x128c1s5p1r8_row  128  8192  8192"
)
if [ -n "${GEMM_TMA_CONFIGS:-}" ]; then mapfile -t CONFIGS < <(grep -v '^[[:space:]]*$' <<<"$GEMM_TMA_CONFIGS"); fi
if [ -n "${GEMM_TMA_CASES:-}" ]; then mapfile -t CASES < <(grep -v '^[[:space:]]*$' <<<"$GEMM_TMA_CASES"); fi
fails=0
pids=()
for entry in "${CONFIGS[@]}"; do
  read -r tag bm bn co st pe ra bc ws <<<"$entry"
  ws=${ws:-1}
  ( "$NVCC" -gencode arch=compute_${ARCH#sm_},code=$ARCH -O3 -std=c++17 -I templates -DBLOCK_M=$bm -DBLOCK_N=$bn -DCONSUMERS=$co -DSTAGES=$st \
      -DPERSISTENT=$pe -DRASTER=$ra -DB_COL=$bc -DWS=$ws -Xptxas -v tools/check/gemm_tma_check.cu -o "$OUT/gemm_$tag" -lcuda \
      >"$OUT/gemm_$tag.build.txt" 2>&1 || { echo "FAILED to build gemm_$tag" >&2; tail -20 "$OUT/gemm_$tag.build.txt" >&2; exit 1; }
    # the same kernel as a cubin, for its SASS
    "$NVCC" -cubin -gencode arch=compute_${ARCH#sm_},code=$ARCH -O3 -std=c++17 -I templates -DBLOCK_M=$bm -DBLOCK_N=$bn \
      -DCONSUMERS=$co -DSTAGES=$st -DPERSISTENT=$pe -DRASTER=$ra -DB_COL=$bc -DWS=$ws tools/check/gemm_tma_check.cu -o "$OUT/gemm_$tag.cubin" ) &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
for entry in "${CONFIGS[@]}"; do
  read -r tag _ <<<"$entry"
  [ -x "$OUT/gemm_$tag" ] || continue
  # "gemm_bf16: 168 registers, 0 spill bytes; 4096 HGMMA in its SASS"
  regs=$(awk '/Compiling entry function .gemm_bf16/ {f = 1} f && /Used [0-9]+ registers/ {for (i = 1; i <= NF; i++) if ($i == "Used") print $(i + 1); exit}' "$OUT/gemm_$tag.build.txt")
  spill=$(awk '/Compiling entry function .gemm_bf16/ {f = 1} f && /spill stores/ {print $5 + $9; exit}' "$OUT/gemm_$tag.build.txt")
  sass=$(tools/check/gemm_sass.sh "$OUT/gemm_$tag.cubin")
  echo "built gemm_$tag: ${regs:-?} registers, ${spill:-?} spill bytes; SASS $sass"
  hgmma=$(awk '{for (i = 1; i < NF; i++) if ($i == "HGMMA") print $(i + 1)}' <<<"$sass")
  utma=$(awk '{for (i = 1; i < NF; i++) if ($i == "UTMALDG") print $(i + 1)}' <<<"$sass")
  [ "${spill:-1}" = 0 ] && [ "${hgmma:-0}" -gt 0 ] && [ "${utma:-0}" -gt 0 ] || fails=$((fails + 1))
done
[ "${1:-}" = --build-only ] && exit $fails
for entry in "${CASES[@]}"; do
  read -r tag M N K <<<"$entry"
  if [ ! -x "$OUT/gemm_$tag" ]; then echo "FAIL $tag (not built)"; fails=$((fails + 1)); continue; fi
  timeout 60 "$OUT/gemm_$tag" --tag "$tag" --M "$M" --N "$N" --K "$K" || fails=$((fails + 1))
done
exit $fails
