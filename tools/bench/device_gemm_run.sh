#!/usr/bin/env bash
# device_gemm_run.sh OUTDIR: one device call for the GEMM family (issue 5), about 8 minutes on an H200.
#   1. TMA smoke test: tools/check/gemm_tma_check.sh (its nvcc builds run while cuBLAS is timed)
#   2. (no peers: tools/bench/device_compare.sh gemm compares with cuBLAS by one timer)
#   3. tune run recipes/gemm.lua --strategy exhaustive (batches of 32: compiles overlap measurements), seed 1, under a time limit (results are stored as they
#      come, so a cut run still reports what it measured)
#   4. the best variant's SASS per problem (HGMMA / UTMALDG / spills: tools/check/gemm_sass.sh)
#   5. OUTDIR/gemm.db (lean_db.py), OUTDIR/logs.tgz, and the table tuned vs cuBLAS (gemm_report.py)
# env: TUNE_LIMIT_S (tune run limit, default 400), SKIP_CHECK=1 (no smoke test), START_DB (a gemm.db
#   of an earlier call that was cut: tune run resumes it, measuring only what it lacks)
set -u
out=${1:?usage: device_gemm_run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
logs=/tmp/gemm_logs
rm -rf "$logs" /tmp/gemm.db /tmp/gemm.db-wal /tmp/gemm.db-shm /tmp/gemm_cubins
mkdir -p "$logs"
if [ -n "${START_DB:-}" ]; then cp "$START_DB" /tmp/gemm.db || exit 1; fi
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$logs/status.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$logs/gpu.txt" 2>&1
if [ "${SKIP_CHECK:-0}" != 1 ]; then
  OUT=/tmp/gemm_check tools/check/gemm_tma_check.sh --build-only > "$logs/tma_build.log" 2>&1 &
  build_pid=$!
fi
# Peers are not timed here: `tune compare` (tools/bench/device_compare.sh) times them with the
# same CUPTI protocol as tune, in interleaved rounds (docs/measurement.md).
if [ "${SKIP_CHECK:-0}" != 1 ]; then
  wait "$build_pid"
  stamp "TMA smoke build rc=$? (failed builds or checks: see tma_build.log)"
  OUT=/tmp/gemm_check timeout 120 tools/check/gemm_tma_check.sh > "$logs/tma_check.log" 2>&1
  stamp "TMA smoke rc=$? (failures)"
fi
stamp "tune run (limit ${TUNE_LIMIT_S:-400} s)"
timeout "${TUNE_LIMIT_S:-400}" build/tune run recipes/gemm.lua --db /tmp/gemm.db --strategy exhaustive --seed 1 --quiet > "$logs/tune.log" 2>&1
stamp "tune rc=$? (124: time limit; results so far are kept)"
python3 tools/bench/gemm_report.py /tmp/gemm.db "$logs/gemm_peers.json" /tmp/gemm_cubins > "$logs/report.md" 2>&1
tools/check/gemm_sass.sh /tmp/gemm_cubins/*.cubin > "$logs/sass.txt" 2>&1
python3 tools/lean_db.py /tmp/gemm.db "$out/gemm.db" >> "$logs/status.txt" 2>&1
tar czf "$out/logs.tgz" -C /tmp gemm_logs
stamp "done"
echo "== TMA smoke test"; grep -E "^(built|PASS|FAIL)" "$logs/tma_build.log" "$logs/tma_check.log" 2>/dev/null | sed 's/^[^:]*://'
echo "== best variant's SASS per problem (HGMMA: wgmma, UTMALDG: TMA, LDL/STL: local memory)"; cat "$logs/sass.txt"
echo "== status"; cat "$logs/status.txt"; tail -3 "$logs/tune.log"
echo "== tuned vs cuBLAS (same call)"; cat "$logs/report.md"
