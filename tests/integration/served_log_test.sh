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
LOG
"$TUNE" run "$SRC/recipes/transpose.lua" --problems-from log.jsonl --compile-only --db t.db >run.txt 2>&1
check "run exits 0" test $? -eq 0
check "the recipe the log names gets its two distinct problems" contains run.txt "transpose.bf16: 2 served problems"
check "the other recipe of the file is skipped" contains run.txt "transpose.f32: 0 served problems"
check "problems named after their dims" test "$(sql t.db "select group_concat(name, ' ') from (select name from problems order by name)")" = "served_C1000_R24 served_C4096_R100"
check "no problem of the skipped recipe" test "$(sql t.db "select count(*) from runs r join recipes c on c.id = r.recipe_id where c.name = 'transpose.f32'")" = 0

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
