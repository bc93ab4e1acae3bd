#!/usr/bin/env bash
# gemm.fp8 row scales staged in shared memory for the epilogue (cp.async at the tile's start): an A/B
# of the template before (ROOT_OLD, `git archive` of the commit before) and after on six row-scaled
# problems of both fp8 recipes, runs alternating; both recipes re-recorded whole; the large row- and
# tensor-scaled problems compared with torch._scaled_mm; tests/python test_ops_gpu on the new recording
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
B=build/gpu/tune W=/tmp/w9; rm -rf $W; mkdir -p $W
ROOT_OLD=${ROOT_OLD:-build/exp/rootOld}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P="--problem m4096n4096k7168_row --problem m4096n14336k4096_row --problem m4096n7168k18432_row --problem m16n14336k4096_row --problem m64n4096k14336_row --problem m1000n1040k1072_row"
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
for r, p, t in db.execute("select recipe, problem, min(median_ns)/1000.0 from v_results where status='ok' group by recipe, problem order by recipe, problem"):
    print(sys.argv[1].split('/')[-1], r, p, round(t, 3))
bad = db.execute("select count(*) from v_results where status not in ('ok','skipped')").fetchone()[0]
print(sys.argv[1].split('/')[-1], "not ok:", bad)
PY
done
timeout -s INT 230 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 150 $B compare recipes/gemm/fp8.lua --problem M=4096,scale=row --problem M=8192,scale=row --problem M=4096,scale=tensor --rounds 3 --top-k 2 --db $W/gemm.fp8.db > $OUT/gemm.fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
cp $OUT/gemm.fp8.db data/recorded/h200/gemm.fp8.db
(cd tests/python && SRC=$R TUNE=$R/build/gpu/tune TUNERT_LIBRARY=$R/build/gpu/libtunert.so PYTHONPATH=$R/python/src timeout 150 python3 -m unittest test_ops_gpu > $OUT/test_ops_gpu.txt 2>&1; echo "test_ops_gpu rc $?" | tee -a $OUT/gpu.txt)
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/gemm.fp8.log | cut -c1-200
grep -E "^\| |^### " $OUT/gemm.fp8.compare.txt | cut -c1-200
tail -4 $OUT/test_ops_gpu.txt
