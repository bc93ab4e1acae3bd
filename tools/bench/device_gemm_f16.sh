#!/usr/bin/env bash
# device_gemm_f16.sh OUTDIR: one device call for GEMM with fp16 inputs (recipes/gemm/f16.lua), a few
# minutes on an H100 / H200:
#   1. (no peers here: tools/bench/device_compare.sh times cuBLAS by the same protocol)
#   2. tune run recipes/gemm/f16.lua --strategy exhaustive --seed 1, under a time limit
#   3. the table tuned vs cuBLAS (gemm_report.py) and the best variant's SASS per problem (HGMMA /
#      HMMA with F16 operands, UTMALDG, spills: tools/check/gemm_sass.sh)
#   4. OUTDIR/gemm.f16.db (lean_db.py), OUTDIR/logs.tgz
# env: TUNE_LIMIT_S (tune run limit, default 400)
set -u
out=${1:?usage: device_gemm_f16.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
logs=/tmp/gemm_f16_logs
db=/tmp/gemm.f16.db
rm -rf "$logs" "$db" "$db-wal" "$db-shm" /tmp/gemm_f16_cubins
mkdir -p "$logs"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$logs/status.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$logs/gpu.txt" 2>&1
# Peers are not timed here: `tune compare` (tools/bench/device_compare.sh) times them with the
# same CUPTI protocol as tune, in interleaved rounds (docs/measurement.md).
stamp "tune run (limit ${TUNE_LIMIT_S:-400} s)"
timeout "${TUNE_LIMIT_S:-400}" build/tune run recipes/gemm/f16.lua --db "$db" --strategy exhaustive --seed 1 --quiet > "$logs/tune.log" 2>&1
stamp "tune rc=$? (124: time limit; results so far are kept)"
python3 tools/bench/gemm_report.py "$db" "$logs/gemm_peers.json" /tmp/gemm_f16_cubins > "$logs/report.md" 2>&1
tools/check/gemm_sass.sh /tmp/gemm_f16_cubins/*.cubin > "$logs/sass.txt" 2>&1
# the tensor-core opcodes with their operand types (bf16 ones say .BF16; fp16 is the default form)
for f in /tmp/gemm_f16_cubins/*.cubin; do
  echo "$(basename "$f" .cubin): $(cuobjdump -sass "$f" 2>/dev/null | grep -oE 'H(G)?MMA\.[A-Za-z0-9.]+' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
done > "$logs/mma_types.txt" 2>&1
python3 tools/lean_db.py "$db" "$out/gemm.f16.db" >> "$logs/status.txt" 2>&1
tar czf "$out/logs.tgz" -C /tmp gemm_f16_logs
stamp "done"
echo "== statuses"; sqlite3 "$db" "SELECT status, count(*) FROM results GROUP BY status" 2>/dev/null \
  || python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT status, count(*) FROM results GROUP BY status').fetchall())" "$db"
echo "== best variant's SASS per problem"; cat "$logs/sass.txt"; cat "$logs/mma_types.txt"
echo "== tuned vs cuBLAS (fp16 in)"; cat "$logs/report.md"
