#!/usr/bin/env bash
# `tune run --problems-from LOG`: a served-problem log (what libtunert writes under
# TUNERT_LOG_UNTUNED) becomes the problem list; recipes the log does not name are skipped;
# bad lines and foreign dims are refused with the file, line and reason.
. "$(dirname "$0")/lib.sh"
cat > log.jsonl <<'LOG'
{"family":"transpose.bf16","dims":{"C":1000,"R":24},"served_by":"nearest"}

{"family":"gemm","dims":{"K":8,"M":3,"N":8,"b_layout":"col"},"served_by":"fallback"}
{"served_by":"nearest","dims":{"R":24,"C":1000},"family":"transpose.bf16"}
{"family":"transpose.bf16","dims":{"C":4096,"R":100},"served_by":"none"}
{"family":"transpose.bf16","dims":{"C":1024,"R":128},"served_by":"nearest"}
LOG
"$TUNE" run "$SRC/recipes/transpose.lua" --problems-from log.jsonl --compile-only --db t.db >run.txt 2>&1
check "run exits 0" test $? -eq 0
check "the recipe the log names gets its three distinct problems" contains run.txt "transpose.bf16: 3 served problems"
check "the other recipe of the file is skipped" contains run.txt "transpose.f32: 0 served problems"
check "problems named after their dims" test "$(sql t.db "select group_concat(name, ' ') from (select name from problems order by name)")" = "served_C1000_R24 served_C1024_R128 served_C4096_R100"
check "no problem of the skipped recipe" test "$(sql t.db "select count(*) from runs r join recipes c on c.id = r.recipe_id where c.name = 'transpose.f32'")" = 0

# a bundle takes the database's served problems as problems of the recipe (they are not in its file):
# a synthetic ok result (a fake GPU, made-up time: this bundle is never launched) for one of them
python3 - t.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
dev = c.execute("insert into devices (kind, name, arch, sm_count) values ('gpu', 'FAKE GPU', 'sm_90a', 132) returning id").fetchone()[0]
rid, cfg, prob = c.execute("select r.recipe_id, r.config_id, r.problem_id from results r join problems p on p.id = r.problem_id"
                           " where p.name = 'served_C1024_R128' limit 1").fetchone()
c.execute("insert into results (recipe_id, device_id, config_id, problem_id, status, median_ns, samples)"
          " values (?, ?, ?, ?, 'ok', 5000.0, 10)", (rid, dev, cfg, prob))
c.commit()
PY
"$TUNE" bundle --db t.db --recipe transpose.bf16 -o t.bundle >bundle.txt 2>&1
check "bundle of a served problem exits 0" test $? -eq 0
check "its entry is the served problem" test "$(sql t.bundle "select problem_name from entries where kind = 'tuned'")" = served_C1024_R128
check "not left out as foreign to the recipe" lacks bundle.txt "no longer in the recipe"

printf '{"family":"transpose.bf16","dims":{"N":5}}\n' > foreign.jsonl
"$TUNE" run "$SRC/recipes/transpose.lua" --problems-from foreign.jsonl --compile-only --db t.db >foreign.txt 2>&1
check "foreign dims: usage error" test $? -eq 2
check "foreign dims named" contains foreign.txt "served problem {\"N\":5} has dims {N}, the recipe's problems {C,R}"

printf '{"family":"transpose.bf16","dims":{"C":8,"R":8}}\nnot json\n' > bad.jsonl
"$TUNE" run "$SRC/recipes/transpose.lua" --problems-from bad.jsonl --compile-only --db t.db >bad.txt 2>&1
check "bad line: usage error" test $? -eq 2
check "bad line: file and line" contains bad.txt "bad.jsonl:2: not JSON"

printf '{"family":"copy","dims":{"N":8}}\n' > other.jsonl
"$TUNE" run "$SRC/recipes/transpose.lua" --problems-from other.jsonl --compile-only --db t.db >other.txt 2>&1
check "no problem for the file's recipes: refused" test $? -eq 2
check "says so" contains other.txt "no problem of any recipe of"

"$TUNE" run "$SRC/recipes/transpose.lua" --problems-from missing.jsonl --compile-only --db t.db >missing.txt 2>&1
check "missing log: error" test $? -ne 0
check "missing log named" contains missing.txt "missing.jsonl: cannot open the served-problem log"
finish
