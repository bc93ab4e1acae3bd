#!/usr/bin/env bash
# tools/bench/ab_roots.sh and ab_report.py: an A/B of two source trees, run here on a replay (both
# trees replay the same recording, so neither is faster), then the verdict on databases whose
# times are scaled by hand (nothing here is a measurement).
source "$(dirname "$0")/lib.sh"
ab="$SRC/tools/bench/ab_roots.sh"
report="$SRC/tools/bench/ab_report.py"
rec="$SRC/data/recorded/h200/gemm.fp8.db"
mkdir old && cp -r "$SRC/templates" "$SRC/recipes" old/ && touch old/.tune-root

TUNE=$TUNE bash "$ab" out --old old -- "$SRC/recipes/gemm/fp8.lua" --device "replay:$rec" \
  --problem m1000n1040k1072_tensor --problem m16n14336k4096_row > run.txt 2>&1
check "two rounds of a replay run" test $? -eq 0
check "four runs, alternating" test "$(grep -c '^ab_roots: round [12] \(old\|new\): rc 0' run.txt)" -eq 4
check "one row per recipe and problem (4)" test "$(grep -c '^| gemm.fp8' out/ab.md)" -eq 4
check "the same recording gives the same bests" test "$(grep -c '| 1.0000 | .* | 1.0000 |$' out/ab.md)" -eq 4
check "neither tree faster: keep" test "$(cat out/decision)" = keep
check "out/ab.md says: new faster on 0 of 8 (round, problem) pairs" contains out/ab.md "new faster on 0 of 8 (round, problem) pairs"

# the new tree's times scaled by hand: 5 % faster everywhere, then one result not verified
scale() { python3 - "$@" <<'PY'
import shutil, sqlite3, sys
src, dst, factor, wrong = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"
shutil.copy(src, dst)
db = sqlite3.connect(dst)
db.execute("update results set median_ns = median_ns * ?", (factor,))
if wrong:
    db.execute("update results set status = 'wrong' where id = (select min(id) from results)")
db.commit()
PY
}
for i in 1 2; do scale out/ab_new_$i.db fast_$i.db 0.95 0; done
python3 "$report" out/ab_old_1.db fast_1.db out/ab_old_2.db fast_2.db > fast.md
check "5 % faster on every pair: exit 0" test $? -eq 0
check "fast.md says: new faster on 8 of 8" contains fast.md "new faster on 8 of 8"
check "fast.md says: decision: adopt" contains fast.md "decision: adopt"
check "new / old 0.9500" test "$(grep -c '| 0.9500 | .* | 0.9500 |$' fast.md)" -eq 4
scale out/ab_new_2.db wrong_2.db 0.95 1
python3 "$report" out/ab_old_1.db fast_1.db out/ab_old_2.db wrong_2.db > wrong.md
check "wrong.md says: decision: keep" contains wrong.md "decision: keep"
check "wrong.md says: old 0, new 1" contains wrong.md "old 0, new 1"
scale out/ab_new_2.db slow_2.db 1.05 0
python3 "$report" out/ab_old_1.db fast_1.db out/ab_old_2.db slow_2.db > half.md
check "half.md says: new faster on 4 of 8" contains half.md "new faster on 4 of 8"
check "half.md says: decision: keep" contains half.md "decision: keep"
python3 "$report" --min-faster 0.5 out/ab_old_1.db fast_1.db out/ab_old_2.db slow_2.db > half5.md
check "half5.md says: decision: adopt" contains half5.md "decision: adopt"

# bad arguments and empty databases
bash "$ab" out2 -- "$SRC/recipes/gemm/fp8.lua" > noold.txt 2>&1
check "no --old: exit 2" test $? -eq 2
check "noold.txt says: --old ROOT is required" contains noold.txt "--old ROOT is required"
bash "$ab" out2 --old "$WORK" -- "$SRC/recipes/gemm/fp8.lua" > noroot.txt 2>&1
check "an --old without .tune-root: exit 2" test $? -eq 2
python3 "$report" out/ab_old_1.db > odd.txt 2>&1
check "an odd number of databases: exit 2" test $? -eq 2
python3 -c "import sqlite3; sqlite3.connect('empty.db').execute('create table x (y)')"
python3 "$report" empty.db out/ab_new_1.db > empty.txt 2>&1
check "a database without results: exit 1" test $? -eq 1
finish
