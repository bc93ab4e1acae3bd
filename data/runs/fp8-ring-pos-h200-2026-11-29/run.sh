#!/usr/bin/env bash
# gemm.fp8 with the ring position advanced per K block (no division of a running index per block):
# an A/B of the template before (ROOT_OLD, `git archive` of the commit before) and after on seven
# problems of both fp8 recipes, runs alternating; only where the new template is faster on at least
# 80 % of the (recipe, problem) pairs of the two rounds: both recipes re-recorded whole (no comparison
# with the peer: the session's device time did not allow one)
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
B=build/gpu/tune W=/tmp/w10; rm -rf $W; mkdir -p $W
ROOT_OLD=${ROOT_OLD:-build/exp/rootOld}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P="--problem m4096n4096k7168_tensor --problem m4096n4096k7168_row --problem m4096n4096k7168_block --problem m4096n14336k4096_tensor --problem m4096n14336k4096_block --problem m16n14336k4096_row --problem m1000n1040k1072_block"
for i in 1 2; do
  for v in old new; do
    root=$R; [ $v = old ] && root=$ROOT_OLD
    timeout -s INT 60 $B run recipes/gemm/fp8.lua --root $root $P --strategy exhaustive --seed $i --quiet --jobs 16 --db $W/ab_${v}_$i.db > $W/ab_${v}_$i.log 2>&1
    echo "ab $v $i rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  done
done
python3 - $W <<'PY' | tee $OUT/ab.txt
import sqlite3, sys
w = sys.argv[1]
def bests(f):
    db = sqlite3.connect(f)
    bad = db.execute("select count(*) from v_results where status not in ('ok','skipped')").fetchone()[0]
    return {(r, p): t for r, p, t in db.execute("select recipe, problem, min(median_ns)/1000.0 from v_results where status='ok' group by recipe, problem")}, bad
faster = total = wrong = 0
for i in (1, 2):
    old, bo = bests(f"{w}/ab_old_{i}.db")
    new, bn = bests(f"{w}/ab_new_{i}.db")
    print(f"round {i}: not ok old {bo}, new {bn}")
    wrong += bn
    for k in sorted(old):
        if k in new:
            total += 1
            faster += new[k] < old[k]
            print(f"  {k[0]:14s} {k[1]:26s} old {old[k]:9.3f} new {new[k]:9.3f} new/old {new[k] / old[k]:.4f}")
print(f"new faster on {faster} of {total}")
open(f"{w}/go", "w").write("1" if total and faster >= 0.8 * total and wrong == 0 else "0")
PY
if [ "$(cat $W/go)" = 1 ]; then
  timeout -s INT 210 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
  echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
fi
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/gemm.fp8.log 2>/dev/null | cut -c1-200
