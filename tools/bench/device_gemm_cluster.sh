#!/usr/bin/env bash
# device_gemm_cluster.sh OUTDIR: one device call (about 2-3 minutes on an H200) for the GEMM cluster
# variants (issue 5), independent of tune's engine: tools/check/gemm_cluster_check.sh builds (or
# reuses, when its stamps match: BIN=dir of binaries built elsewhere with OUT=dir) the 18 binaries
# of its configurations (9 configs x b row/col; 1 x 1 baselines among them) and runs each on 4096^3,
# 8192^3 and 4000 x 4096 x 4096: checked against the reference kernel and cuBLAS, timed against
# cuBLAS (cublasGemmEx) in the same process. Writes OUTDIR/cluster.log and OUTDIR/logs.tgz (build
# logs, SASS lines, per-run lines); prints the SASS lines, the PASS/FAIL lines and the table last.
# env: BIN (binary dir, default /tmp/gemm_cluster_bin), SHAPES, ITERS (see gemm_cluster_check.sh)
set -u
out=${1:?usage: device_gemm_cluster.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
bin=${BIN:-/tmp/gemm_cluster_bin}
mkdir -p "$bin"
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$bin/gpu.txt" 2>&1
OUT=$bin JOBS=${JOBS:-16} timeout 240 tools/check/gemm_cluster_check.sh --build-only > "$bin/build.log" 2>&1
echo "build rc=$? after $(( $(date +%s) - t0 )) s" >> "$bin/build.log"
OUT=$bin timeout 300 tools/check/gemm_cluster_check.sh --run-only > "$out/cluster.log" 2>&1
rc=$?
echo "run rc=$rc after $(( $(date +%s) - t0 )) s" >> "$out/cluster.log"
tar czf "$out/logs.tgz" -C "$bin" --exclude='gemm_cluster_t*[01]' . 2>/dev/null
cat "$bin/gpu.txt"
echo "== build and SASS (HGMMA: wgmma, UTMALDG: TMA, MULTICAST: multicast TMA, LDL/STL: local memory)"
grep -E "^(built|FAILED|SASS|missing|build rc)" "$bin/build.log"
echo "== runs"
grep -E "^(PASS|FAIL|run rc)" "$out/cluster.log"
sed -n '/^== TFLOP/,$p' "$out/cluster.log"
exit $rc
