#!/usr/bin/env bash
# Not run yet (the session's device time ran out): run4's moe.grouped recording and run3's
# moe.grouped_swiglu recording (data/recorded/h200/) compared with the peers, burst, every problem,
# so that their bundles get back the vendor entries where cuBLAS wins (Mixtral's T 8192 problems
# before). Needs build/gpu2 (a stripped tune, libtune_cupti_py.so) carried; copy the two
# databases that come back over data/recorded/h200/.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
R=$(pwd)
G=$R/build/gpu2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$G:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$G/libtune_cupti_py.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
cp data/recorded/h200/moe.grouped.db /tmp/g.db
cp data/recorded/h200/moe.grouped_swiglu.db /tmp/s.db
timeout -s INT 200 $G/tune compare recipes/moe/grouped.lua --rounds 3 --top-k 2 --timing burst --db /tmp/g.db > $OUT/moe.grouped.compare.txt 2>&1
echo "compare moe.grouped rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py /tmp/g.db $OUT/moe.grouped.db
timeout -s INT 200 $G/tune compare recipes/moe/swiglu.lua --rounds 3 --top-k 2 --timing burst --db /tmp/s.db > $OUT/moe.grouped_swiglu.compare.txt 2>&1
echo "compare moe.grouped_swiglu rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py /tmp/s.db $OUT/moe.grouped_swiglu.db
grep -E "^\| " $OUT/moe.grouped.compare.txt $OUT/moe.grouped_swiglu.compare.txt | grep -v -- "---\|problem |" | cut -d'|' -f2-8 | cut -c1-150
