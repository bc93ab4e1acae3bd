#!/usr/bin/env bash
# tools/bench/cross_gpu.py: a config chosen on one recording, timed in another. Checked against the
# H100 and H200 recordings of gemm.skinny and against a copy where the chosen config failed. The H100
# recording predates the recipe's MMA parameter: its kernels are MMA 0's (--default MMA=0).
source "$(dirname "$0")/lib.sh"
tool="$SRC/tools/bench/cross_gpu.py"
h100="$SRC/data/recorded/gemm.skinny.db"
h200="$SRC/data/recorded/h200/gemm.skinny.db"

python3 "$tool" > usage.txt 2>&1
check "no arguments: usage, exit 2" test $? -eq 2
check "usage says what it does" contains usage.txt "FROM.db ON.db"
python3 "$tool" --default MMA "$h100" "$h200" > bad.txt 2>&1
check "--default without a value: exit 2" test $? -eq 2
check "--default without a value: said" contains bad.txt "not NAME=VALUE"
python3 "$tool" "$h100" "$h200" > nodefault.txt
check "without --default the H100 configs are not in the H200 space" test "$(grep -c 'not ok on ON' nodefault.txt)" -eq 24

python3 "$tool" "$h100" "$h100" > self.txt
check "a recording against itself: one row per problem (24)" test "$(grep -c '^| gemm.skinny |' self.txt)" -eq 24
check "a recording against itself: the same config everywhere" lacks self.txt "| no |"

python3 "$tool" --default MMA=0 "$h100" "$h200" > cross.txt
check "H100 against H200: 24 problems" test "$(grep -c '^| gemm.skinny |' cross.txt)" -eq 24
# every loss is >= 1 (ON's own best is the fastest there), exactly 1 where the config is the same
check "losses are >= 1.000, 1.000 for the same config" awk -F'|' '/^\| gemm.skinny/ {
  loss = $7 + 0; same = $8; gsub(/ /, "", same)
  if (loss < 1.0 || (same == "yes" && loss != 1.0)) bad = 1 } END { exit bad }' cross.txt
# one row recomputed here: the H200 time of the H100 best over the H200 best
want=$(python3 - "$h100" "$h200" <<'PY'
import json, sqlite3, sys
def best(path):
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = c.execute("""select c.params_json, r.median_ns from results r join configs c on c.id = r.config_id
                        join problems p on p.id = r.problem_id
                        where p.name = 'm128n14336k4096_row' and r.status = 'ok' and r.timing = 'burst'
                        and c.origin not like 'peer:%'""").fetchall()
    out = {}
    for k, v in rows:
        key = json.dumps({"MMA": 0, **json.loads(k)}, sort_keys=True)
        out[key] = min(v, out.get(key, v))
    return out
a, b = best(sys.argv[1]), best(sys.argv[2])
print(f"{b[min(a, key=a.get)] / min(b.values()):.3f}")
PY
)
check "m128n14336k4096_row's loss matches a direct computation ($want)" \
  grep -q "^| gemm.skinny | m128n14336k4096_row | .* | $want | no |" cross.txt

# the H100 best of one problem failed on the other side: said, not counted
cp "$h200" failed.db
python3 - "$h100" failed.db <<'PY'
import json, sqlite3, sys
src = sqlite3.connect(sys.argv[1])
params = src.execute("""select c.params_json from results r join configs c on c.id = r.config_id
                        join problems p on p.id = r.problem_id where p.name = 'm1n8192k8192_row' and r.status = 'ok' and r.timing = 'burst'
                        and c.origin not like 'peer:%' order by r.median_ns limit 1""").fetchone()[0]
dst = sqlite3.connect(sys.argv[2])
ids = [cid for cid, pj in dst.execute("select id, params_json from configs")
       if json.loads(pj) == {"MMA": 0, **json.loads(params)}]
dst.execute(f"""update results set status = 'wrong' where config_id in ({','.join(map(str, ids))})
                and problem_id = (select id from problems where name = 'm1n8192k8192_row')""")
dst.commit()
PY
python3 "$tool" --default MMA=0 "$h100" failed.db > failed.txt
check "a chosen config that failed on the other side is named" contains failed.txt "m1n8192k8192_row | .* | not ok on ON"
finish
