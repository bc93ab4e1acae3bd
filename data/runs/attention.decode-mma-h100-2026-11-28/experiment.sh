#!/usr/bin/env bash
# temporary: attention.decode MMA 1 (bf16 tensor cores) verified and timed, then against cuDNN
set -u
OUT=${OUT:?}
cd build/lib && ln -sf libtunert.so.0.5.0 libtunert.so.0 2>/dev/null; cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
P="--problem b32hq64hkv8d64p16x128 --problem b32hq32hkv8d128p16x256 --problem b1hq32hkv8d128p16x2048 --problem b128hq32hkv8d128p16x64"
echo "== $(date -u +%T) run"
timeout -s INT 150 build/tune run recipes/attention/decode.lua --db $OUT/mma.db --only MMA=1 --seed 1 --quiet $P > $OUT/run.log 2>&1; echo "exit $?"
grep -E "results|GPU busy" $OUT/run.log
sqlite3 $OUT/mma.db "select p.name, r.status, count(*), min(r.median_ns)/1000.0, max(r.err_rel_l2), max(r.honest_rel_l2) from results r join problems p on p.id=r.problem_id group by 1,2"
sqlite3 $OUT/mma.db "select substr(error_text,1,160) from results where status not in ('ok','skipped') limit 3"
echo "== $(date -u +%T) compare"
timeout -s INT 120 build/tune compare recipes/attention/decode.lua --db $OUT/mma.db --rounds 3 --top-k 2 --timing burst $P -o $OUT/compare.md > $OUT/compare.log 2>&1; echo "exit $?"
grep -E '^\| b' $OUT/compare.md
