#!/usr/bin/env bash
# The warm start across GPUs of one architecture (tuner/warm_start.c): bests measured on another GPU
# come after the same shape on this GPU but before other shapes. Checked with tune-bench-search on the
# H100 GEMM recording (data/recorded/h100/gemm.db) with the H200 one as --warm-db: at one evaluation
# bayes starts from the H200's winner of the shape, which beats its cold first guess; a database of
# another architecture gives nothing. No GPU: replay only.
. "$(dirname "$0")/lib.sh"
BENCH_SEARCH="${BENCH_SEARCH:?set BENCH_SEARCH to the tune-bench-search binary}"
H100="$SRC/data/recorded/h100/gemm.db"
H200="$SRC/data/recorded/gemm.db"
check "the two recordings are there" test -f "$H100" -a -f "$H200"
R="$SRC/recipes/gemm.lua"
P=m4096n14336k4096_row
first() { python3 -c 'import json,sys
print([p["strategies"]["bayes"]["evals"][0]["perf_median"] for p in json.load(open(sys.argv[1])) if p["recipe"] == "gemm"][0])' "$1"; }

"$BENCH_SEARCH" "$R" --device "replay:$H100" --warm-db "$H200" --problem $P --repeats 3 --strategies bayes \
  --jobs 1 --json > warm.json 2> warm.err
check "bench-search with the H200 database exits 0" test $? -eq 0
"$BENCH_SEARCH" "$R" --device "replay:$H100" --problem $P --repeats 3 --strategies bayes --jobs 1 --json \
  > cold.json 2> cold.err
check "bench-search without it exits 0" test $? -eq 0
w=$(first warm.json)
c=$(first cold.json)
check "one evaluation: the H200's winner beats the cold first guess ($w > $c)" python3 -c "import sys; sys.exit(not $w > $c)"
check "and is within 3 % of the H100's optimum" python3 -c "import sys; sys.exit(not $w >= 0.97)"

# an sm_80 database: not the same architecture, so no candidates from it
cp "$H200" a100.db && chmod u+w a100.db
python3 -c 'import sqlite3,sys
c=sqlite3.connect(sys.argv[1]); c.execute("update devices set arch = '"'"'sm_80'"'"', name = '"'"'renamed sm_80 GPU (test)'"'"'"); c.commit()' a100.db
"$BENCH_SEARCH" "$R" --device "replay:$H100" --warm-db a100.db --problem $P --repeats 3 --strategies bayes \
  --jobs 1 --json > other.json 2> other.err
check "bench-search with an sm_80 database exits 0" test $? -eq 0
check "another architecture gives no warm start" test "$(first other.json)" = "$c"
finish
