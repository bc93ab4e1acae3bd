#!/usr/bin/env bash
# Compiles queued a batch ahead (tuner/lookahead.h) for the strategies whose next batch is known,
# on tests/fixtures/recipes/ahead.lua (48 configs, each its own binary: batches of 32 and 16) with
# real NVRTC compiles and tests/support/fake_worker.c measuring on one stand-in GPU:
#  - exhaustive and random: every config measured once; the second batch's 16 binaries were
#    compiled ahead and none of the 48 was compiled twice;
#  - a budget of 40 guesses only the 8 configs the second batch can take;
#  - --only: a guess the selection leaves out is not compiled;
#  - compile-only runs compile ahead too, and a second run over the same database compiles nothing.
. "$(dirname "$0")/lib.sh"
export TUNE_WORKER_PROGRAM="${FAKE_WORKER:?set FAKE_WORKER to the stand-in worker}"
R="$SRC/tests/fixtures/recipes/ahead.lua"
run() { FAKE_GPUS=1 FAKE_MEASURE_MS=5 "$TUNE" run "$R" --seed 1 --device cuda:0 --no-warm-start "$@"; }
# binaries no result names: the reference's, and any guess compiled for nothing
unused() { sql "$1" "select count(*) from binaries where key not in (select binary_key from results)"; }

for s in exhaustive random; do
  run --strategy $s --db $s.db >$s.txt 2>&1
  check "$s exits 0" test $? -eq 0
  check "$s: 48 results, each once" \
    test "$(sql $s.db "select count(*), count(distinct config_id) from results")" = "48|48"
  check "$s: the second batch compiled ahead" contains $s.txt "^compiled ahead: 16 of"
  check "$s: 48 compiles, none twice" contains $s.txt "^compile: 48 compiled"
done
check "the reference's binary is the only one no result names" test "$(unused exhaustive.db)" = 1

run --strategy exhaustive --budget 40 --db b.db >b.txt 2>&1
check "budget 40 exits 0" test $? -eq 0
check "budget 40: 40 results" test "$(sql b.db "select count(*) from results")" = 40
check "budget 40: only what the second batch takes is compiled ahead" contains b.txt "^compiled ahead: 8 of"
check "budget 40: no guess compiled for nothing" test "$(unused b.db)" = 1

run --strategy exhaustive --only SALT=0 --db o.db >o.txt 2>&1
check "--only exits 0" test $? -eq 0
check "--only: 12 results" test "$(sql o.db "select count(*) from results where status != 'skipped'")" = 12
check "--only: no guess of a config left out" test "$(unused o.db)" = 1

"$TUNE" run "$R" --strategy exhaustive --compile-only --db c.db >c.txt 2>&1
check "compile-only exits 0" test $? -eq 0
check "compile-only: the second batch compiled ahead" contains c.txt "^compiled ahead: 16 of"
"$TUNE" run "$R" --strategy exhaustive --compile-only --db c.db >c2.txt 2>&1
check "a second compile-only run compiles nothing" lacks c2.txt "^compiled ahead"
check "... and no guess was compiled for nothing" test "$(unused c.db)" = 1
finish
