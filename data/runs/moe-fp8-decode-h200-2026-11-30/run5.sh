#!/usr/bin/env bash
# run4's moe.grouped recording (data/recorded/h200/moe.grouped.db) compared with the peers on the two
# problems where cuBLAS had won before (Mixtral's at T 8192), burst, so that the bundle keeps its
# vendor entries where they still win.
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
timeout -s INT 75 $G/tune compare recipes/moe/grouped.lua --problem e8n28672k4096t8192m1 --problem e8n4096k14336t8192m1 \
  --rounds 3 --top-k 2 --timing burst --db /tmp/g.db > $OUT/moe.grouped.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py /tmp/g.db $OUT/moe.grouped.db
grep -E "^\| " $OUT/moe.grouped.compare.txt | cut -c1-160
