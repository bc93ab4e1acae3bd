#!/usr/bin/env bash
# tools/bench/decode_drawn_bytes.py: a paged-decode recording's bests in GB/s of the lengths the
# worker drew, checked against the H200 decode recording and a hand computation of one row.
source "$(dirname "$0")/lib.sh"
tool="$SRC/tools/bench/decode_drawn_bytes.py"
rec="$SRC/data/recorded/h200/attention.decode.db"

python3 "$tool" > usage.txt 2>&1
check "no arguments: usage, exit 2" test $? -eq 2
check "usage says what it counts" contains usage.txt "drawn lengths"

python3 "$tool" "$rec" > out.txt
check "one row per problem of the recording (6)" test "$(grep -c '^| attention.decode |' out.txt)" -eq 6
check "the single sequence draws the full length" grep -q '^| attention.decode | b1hq32hkv8d128p16x2048 | .* | 1.000 |' out.txt
# one row by hand: B8, lengths from worker_inputs (seed of the best result), K and V bf16 + q and o
want=$(python3 - "$rec" "$SRC/tools/peers" <<'PY'
import json, sqlite3, sys
sys.path.insert(0, sys.argv[2])
import worker_inputs
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
dims, ns, seed = c.execute("""select p.dims_json, r.median_ns, r.seed from results r join problems p on p.id = r.problem_id
    join configs g on g.id = r.config_id
    where p.name = 'b8hq32hkv8d128p32x1024' and r.status = 'ok' and g.origin not like 'peer:%'
    order by r.median_ns limit 1""").fetchone()
d = json.loads(dims)
full = d["max_pages"] * d["page_size"]
lens = worker_inputs.randint(seed, 4, d["B"], 1, full)
nbytes = 2 * sum(lens) * d["HKV"] * d["D"] * 2 + 2 * d["B"] * d["HQ"] * d["D"] * 2
copy = c.execute("select max(value) from peaks where kind = 'copy_GBps'").fetchone()[0]
print(f"{sum(lens) / len(lens) / ((full + 2) // 2):.3f} | {nbytes / ns:.1f} | {100 * nbytes / ns / copy:.1f}")
PY
)
check "B8 L32768 matches a direct computation ($want)" grep -qF "| b8hq32hkv8d128p32x1024 | " out.txt
check "B8 L32768 row: $want" grep -qF "| $want |" out.txt
# the recording holds its comparison's peer results too (faster than tune's there): never a best
n_peer=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select count(*) from results r join configs g on g.id = r.config_id where g.origin like 'peer:%' and r.status = 'ok'\").fetchone()[0])" "$rec")
check "the recording has peer results ($n_peer)" test "$n_peer" -gt 0

# a database with no decode result: said, exit 1
python3 - <<'PY'
import sqlite3
c = sqlite3.connect("empty.db")
c.executescript("create table peaks(kind, value); create table problems(id, recipe_name, name, dims_json);"
                "create table configs(id, origin); create table results(problem_id, config_id, status, median_ns, seed);")
PY
python3 "$tool" empty.db > none.txt 2>&1
check "no decode result: exit 1" test $? -eq 1
check "no decode result: said" contains none.txt "no ok result"
finish
