#!/usr/bin/env bash
# --compile-only compiles every variant with NVRTC (no GPU), stores resource usage,
# and a second identical run resumes every variant: nothing compiled, no row added. The reference
# is compiled once and kept in the compile cache like a variant.
. "$(dirname "$0")/lib.sh"
"$TUNE" run "$SRC/recipes/copy.lua" --compile-only --arch sm_90a --db c.db --problem 64MiB >first.txt 2>&1
check "first run exits 0" test $? -eq 0
n_space=$(sed -n 's/^copy: \([0-9]*\) of .*/\1/p' first.txt)
check "space size printed" test -n "$n_space"
check "every variant compiled" contains first.txt "compile: $n_space compiled, 0 from the compile cache"
n_bin=$(sql c.db "select count(*) from binaries where ok=1 and registers > 0 and key in (select binary_key from results)")
check "binaries stored with registers ($n_bin of $n_space)" test "$n_bin" = "$n_space"
check "... and the reference's, in the compile cache too" \
  test "$(sql c.db "select count(*) from binaries where ok=1 and key not in (select binary_key from results)")" = 1
n_res=$(sql c.db "select count(*) from results where registers > 0 and spill_stores >= 0")
check "results carry resource usage" test "$n_res" = "$n_space"
"$TUNE" run "$SRC/recipes/copy.lua" --compile-only --arch sm_90a --db c.db --problem 64MiB >second.txt 2>&1
check "second run exits 0" test $? -eq 0
check "second run resumes every variant" contains second.txt "$n_space resumed from the database"
check "... compiling nothing" contains second.txt "compile: 0 compiled, 0 from the compile cache"
check "... and adding no row" test "$(sql c.db "select count(*) from results")" = "$n_space"
finish
