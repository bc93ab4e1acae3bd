#!/usr/bin/env bash
# moe.grouped_fp8 first run: a few configs of every problem (are they verified?), then both recipes
# recorded whole unless a variant was wrong; then gemm.fp8 re-recorded whole on the moved mainloop
# (gemm/fp8_mainloop_sm90.cuh), to be set against data/recorded/h200/gemm.fp8.db config by config
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
B=build/gpu/tune W=/tmp/w1; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 120 $B run recipes/moe/grouped_fp8.lua --budget 4 --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/grouped_fp8.db > $OUT/grouped_fp8.budget4.log 2>&1
echo "budget4 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
sqlite3 $W/grouped_fp8.db "select status, count(*) from results group by status" | tee $OUT/status4.txt
if ! grep -q -v -E "^ok\|" $OUT/status4.txt; then
  timeout -s INT 300 $B run recipes/moe/grouped_fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/grouped_fp8.db > $OUT/grouped_fp8.log 2>&1
  echo "exhaustive rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
else
  sqlite3 $W/grouped_fp8.db "select p.name, c.params_json, r.status, r.err_rel_l2, r.err_max_abs, substr(r.error_text,1,200) from results r join problems p on p.id=r.problem_id join configs c on c.id=r.config_id where r.status <> 'ok' limit 40" > $OUT/not_ok.txt
fi
cp $W/grouped_fp8.db $OUT/grouped_fp8.db
timeout -s INT 260 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "gemm.fp8 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
cp $W/gemm.fp8.db $OUT/gemm.fp8.db
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
sqlite3 $W/grouped_fp8.db "select status, count(*) from results group by status"
sqlite3 $W/gemm.fp8.db "select status, count(*) from results group by status"
grep -E "results, |GPU busy" $OUT/grouped_fp8*.log $OUT/gemm.fp8.log | cut -c1-220
