#!/usr/bin/env bash
# gemm_cluster_check.sh: build and run tools/check/gemm_cluster_check.cu for the thread-block-cluster
# configurations of templates/gemm/gemm.cuh below (TMA multicast of a along N, of b along M) and their
# 1 x 1 baselines, on 4096^3 and 8192^3 (b row-major and column-major) plus a partial-tile-row shape:
# checked against the reference kernel and cuBLAS, timed against cuBLAS in the same process.
# Usage: tools/check/gemm_cluster_check.sh [--build-only | --run-only]
# env: NVCC, ARCH (sm_90a), OUT (binaries and logs, default build/check), RUN_TIMEOUT (per binary,
#      default 40 s: a hung cluster kernel costs that, not the whole call), SHAPES (default
#      4096x4096x4096,8192x8192x8192,4000x4096x4096), ITERS (30), JOBS (parallel nvcc builds, default 4)
# Building needs nvcc only (no GPU). A binary whose stamp (hash of its sources and flags) matches is
# not rebuilt, so binaries built on one machine can be carried to the GPU machine with OUT.
# Per binary: ptxas registers/spills and SASS counts (tools/check/gemm_sass.sh: HGMMA, UTMALDG, local
# memory, MULTICAST: multicast TMA loads, required with clusters, absent without); per shape a PASS|FAIL line (gemm_cluster_check.cu);
# last, a table: TFLOP/s and the ratio to cuBLAS per configuration and shape.
# Exit status: number of failed builds, SASS checks and runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
ARCH=${ARCH:-sm_90a}
OUT=${OUT:-build/check}
SHAPES=${SHAPES:-4096x4096x4096,8192x8192x8192,4000x4096x4096}
ITERS=${ITERS:-30}
JOBS=${JOBS:-4}
mode=${1:-all}
mkdir -p "$OUT"
# tag (CMxCN cluster)       BLOCK_M BLOCK_N CONSUMERS STAGES PERSISTENT RASTER CLUSTER_M CLUSTER_N
CONFIGS=(
  "t128x256p0_1x1  128 256 2 4 0 8 1 1"
  "t128x256p1_1x1  128 256 2 4 1 8 1 1"
  "t128x256p0_2x1  128 256 2 4 0 8 2 1"
  "t128x256p0_1x2  128 256 2 4 0 8 1 2"
  "t128x256p1_2x1  128 256 2 4 1 8 2 1"
  "t128x256p1_1x2  128 256 2 4 1 8 1 2"
  "t256x128p0_2x1  256 128 2 4 0 8 2 1"
  "t256x128p0_1x2  256 128 2 4 0 8 1 2"
  "t128x256p0_2x2  128 256 2 4 0 8 2 2"
)
SOURCES=(tools/check/gemm_cluster_check.cu templates/gemm/gemm.cuh templates/gemm/gemm_sm90.cuh
         templates/gemm/reference.cuh templates/common/*.cuh)
src_hash=$(cat "${SOURCES[@]}" | sha256sum | cut -c1-16)
fails=0

build_one() {  # tag bm bn co st pe ra cm cn bcol
  local tag=$1 name="gemm_cluster_$1_${10}"
  local flags="-gencode arch=compute_${ARCH#sm_},code=$ARCH -O3 -std=c++17 -I templates -DBLOCK_M=$2 -DBLOCK_N=$3 -DCONSUMERS=$4 -DSTAGES=$5 -DPERSISTENT=$6 -DRASTER=$7 -DCLUSTER_M=$8 -DCLUSTER_N=$9 -DB_COL=${10}"
  local stamp="$src_hash $flags"
  if [ -x "$OUT/$name" ] && [ -f "$OUT/$name.cubin" ] && [ "$(cat "$OUT/$name.stamp" 2>/dev/null)" = "$stamp" ]; then return 0; fi
  rm -f "$OUT/$name" "$OUT/$name.cubin" "$OUT/$name.stamp"
  # shellcheck disable=SC2086
  "$NVCC" $flags -Xptxas -v tools/check/gemm_cluster_check.cu -o "$OUT/$name" -lcuda -lcublas >"$OUT/$name.build.txt" 2>&1 &&
    "$NVCC" -cubin $flags tools/check/gemm_cluster_check.cu -o "$OUT/$name.cubin" >>"$OUT/$name.build.txt" 2>&1 ||
    { echo "FAILED to build $name" >&2; tail -20 "$OUT/$name.build.txt" >&2; return 1; }
  echo "$stamp" >"$OUT/$name.stamp"
}

names=()
if [ "$mode" != --run-only ]; then
  pids=()
  for entry in "${CONFIGS[@]}"; do
    read -r tag bm bn co st pe ra cm cn <<<"$entry"
    for bc in 0 1; do
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 1; done
      build_one "$tag" "$bm" "$bn" "$co" "$st" "$pe" "$ra" "$cm" "$cn" "$bc" &
      pids+=($!)
    done
  done
  for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
fi
for entry in "${CONFIGS[@]}"; do
  read -r tag _ _ _ _ _ _ cm cn <<<"$entry"
  for bc in 0 1; do
    name="gemm_cluster_${tag}_$bc"
    names+=("$name")
    [ -x "$OUT/$name" ] || { echo "missing $name"; fails=$((fails + 1)); continue; }
    [ "$mode" = --run-only ] && continue
    # "gemm_bf16: 168 registers, 0 spill bytes"
    regs=$(awk '/Compiling entry function .gemm_bf16/ {f = 1} f && /Used [0-9]+ registers/ {for (i = 1; i <= NF; i++) if ($i == "Used") print $(i + 1); exit}' "$OUT/$name.build.txt")
    spill=$(awk '/Compiling entry function .gemm_bf16/ {f = 1} f && /spill stores/ {print $5 + $9; exit}' "$OUT/$name.build.txt")
    sass=$(tools/check/gemm_sass.sh "$OUT/$name.cubin")
    echo "built $name: ${regs:-?} registers, ${spill:-?} spill bytes; SASS $sass"
    hgmma=$(awk '{for (i = 1; i < NF; i++) if ($i == "HGMMA") print $(i + 1)}' <<<"$sass")
    utma=$(awk '{for (i = 1; i < NF; i++) if ($i == "UTMALDG") print $(i + 1)}' <<<"$sass")
    mc=$(awk '{for (i = 1; i < NF; i++) if ($i == "MULTICAST") print $(i + 1)}' <<<"$sass")
    ldl=$(awk '{for (i = 1; i < NF; i++) if ($i == "LDL" || $i == "STL") s += $(i + 1)} END {print s + 0}' <<<"$sass")
    want_mc=0
    [ $((cm * cn)) -gt 1 ] && want_mc=1
    ok=1
    [ "${spill:-1}" = 0 ] && [ "${hgmma:-0}" -gt 0 ] && [ "${utma:-0}" -gt 0 ] && [ "$ldl" = 0 ] || ok=0
    if [ "$want_mc" = 1 ] && [ "${mc:-0}" -eq 0 ]; then ok=0; fi
    if [ "$want_mc" = 0 ] && [ "${mc:-0}" -ne 0 ]; then ok=0; fi
    [ "$ok" = 1 ] || { echo "SASS check FAILED for $name"; fails=$((fails + 1)); }
  done
done
[ "$mode" = --build-only ] && exit $fails
log="$OUT/gemm_cluster_runs.txt"
: >"$log"
for name in "${names[@]}"; do
  [ -x "$OUT/$name" ] || continue
  timeout "${RUN_TIMEOUT:-40}" "$OUT/$name" --tag "${name#gemm_cluster_}" --shapes "$SHAPES" --iters "$ITERS" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || { echo "FAIL ${name#gemm_cluster_} exit status $rc" | tee -a "$log"; fails=$((fails + 1)); }
done
echo "== TFLOP/s (ratio to cuBLAS, > 1 faster) per configuration; tag: tiles, p persistent, cluster CMxCN, _0 row-major b / _1 column-major b"
python3 - "$log" <<'PY'
import re, sys
rows, shapes = {}, []
for line in open(sys.argv[1]):
    m = re.match(r"(PASS|FAIL) (\S+) (m\d+n\d+k\d+) .* tflops=([\d.]+) cublas_us=[\d.]+ cublas_tflops=([\d.]+) ratio=([\d.]+)", line)
    if not m:
        continue
    ok, tag, shape, tf, ctf, ratio = m.groups()
    if shape not in shapes:
        shapes.append(shape)
    rows.setdefault(tag, {})[shape] = f"{float(tf):.0f} ({float(ratio):.2f}x){'' if ok == 'PASS' else ' FAIL'}"
print("| config | " + " | ".join(shapes) + " |")
print("|---|" + "---|" * len(shapes))
for tag, r in rows.items():
    print(f"| {tag} | " + " | ".join(r.get(s, "-") for s in shapes) + " |")
PY
echo "failures: $fails"
exit $fails
