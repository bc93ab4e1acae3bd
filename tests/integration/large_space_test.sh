#!/usr/bin/env bash
# A space of 10^8 configs streams: `tune run --budget N` starts within seconds instead of
# evaluating every config for the problem first, stores exactly N results, and a config the
# problem rejects (its `requires`) is recorded as skipped, with the reason, when proposed.
. "$(dirname "$0")/lib.sh"
FX="$SRC/tests/fixtures/recipes"
t0=$SECONDS
"$TUNE" run "$FX/large_space.lua" --compile-only --budget 3 --seed 1 --db big.db >run.txt 2>&1
check "a budgeted run of 10^8 configs succeeds" test $? -eq 0
check "within 60 s ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -lt 60
check "the space is counted" contains run.txt "100000000 of 100000000 configs satisfy the constraints"
check "the run says it is not filtered ahead" contains run.txt "not filtered ahead"
check "compile-only variants are shown compiled" contains run.txt "\] compiled  "
# a proposal may be one of the configs the problem rejects (skipped, not compiled)
n_co=$(sql big.db "SELECT count(*) FROM results WHERE error_text = 'compile-only'")
check "the summary says they were not timed" contains run.txt "$n_co compiled (compile-only, not timed)"
check "the budget holds: 3 results" test "$(sql big.db "SELECT count(*) FROM results")" = 3
"$TUNE" run "$FX/large_space.lua" --compile-only --budget 2 --only X4=100 --db rejected.db >rej.txt 2>&1
check "configs the problem rejects run too" test $? -eq 0
check "a rejected config is skipped with its requires" \
  test "$(sql rejected.db "SELECT count(*) FROM results WHERE status = 'skipped' AND error_text = 'requires X4 ~= 100'")" = 2
finish
