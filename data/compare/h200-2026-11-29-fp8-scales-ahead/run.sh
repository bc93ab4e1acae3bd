#!/usr/bin/env bash
# gemm.fp8 block scales loaded two blocks ahead from per-tile row pointers: first an A/B of the
# template before (ROOT_OLD, `git archive` of the commit before) and after on six block-scaled
# problems, runs alternating; then both fp8 recipes re-recorded whole and the large block-scaled
# problems compared with the blockwise torch scaled_mm (cuBLASLt)
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
B=build/gpu/tune W=/tmp/w7; rm -rf $W; mkdir -p $W
ROOT_OLD=${ROOT_OLD:-build/exp/rootOld}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P="--problem m4096n4096k7168_block --problem m4096n14336k4096_block --problem m4096n4096k14336_block --problem m1n4096k14336_block --problem m16n7168k18432_block --problem m1000n1040k1072_block"
for i in 1 2; do
  for v in old new; do
    root=$R; [ $v = old ] && root=$ROOT_OLD
    timeout -s INT 60 $B run recipes/gemm/fp8.lua --root $root $P --strategy exhaustive --seed $i --quiet --jobs 16 --db $W/ab_${v}_$i.db > $W/ab_${v}_$i.log 2>&1
    echo "ab $v $i rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  done
done
for f in $W/ab_*.db; do
  python3 - "$f" <<'PY' | tee -a $OUT/ab.txt
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for p, t in db.execute("select problem, min(median_ns)/1000.0 from v_results where recipe='gemm.fp8' and status='ok' group by problem order by problem"):
    print(sys.argv[1].split('/')[-1], p, round(t, 3))
bad = db.execute("select count(*) from v_results where status not in ('ok','skipped')").fetchone()[0]
print(sys.argv[1].split('/')[-1], "not ok:", bad)
PY
done
timeout -s INT 230 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 150 $B compare recipes/gemm/fp8.lua --problem M=4096,scale=block --problem M=8192,scale=block --rounds 3 --top-k 2 --db $W/gemm.fp8.db > $OUT/gemm.fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/gemm.fp8.log | cut -c1-200
grep -E "^\| |^### " $OUT/gemm.fp8.compare.txt | cut -c1-200
