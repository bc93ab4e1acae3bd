#!/usr/bin/env bash
# The honest-error gpu fixture (tests/fixtures/recipes/partials.lua, tests/gpu/honest_tolerance_test.sh)
# loads and compiles, every variant and its reference, without a GPU.
. "$(dirname "$0")/lib.sh"
"$TUNE" run "$SRC/tests/fixtures/recipes/partials.lua" --compile-only --db p.db >run.txt 2>&1
rc=$?
check "compile-only run succeeds (rc $rc)" test $rc -eq 0
check "every variant compiles" test "$(sql p.db "select count(*) from results where error_text = 'compile-only'")" -eq 6
check "none fails to compile" test "$(sql p.db "select count(*) from results where status = 'compile_error'")" -eq 0
finish
