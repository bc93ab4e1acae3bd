#!/usr/bin/env bash
# On a GPU: measure a few copy variants and check they verify and time.
# Without a driver: exit 77 (ctest reports skipped).
. "$(dirname "$0")/../integration/lib.sh"
"$TUNE" run "$SRC/recipes/copy.lua" --device cuda:0 --db g.db --problem 64MiB --budget 8 --seed 7 >run.txt 2>&1
rc=$?
skip_without_gpu run.txt
check "gpu run exits 0 (rc $rc)" test $rc -eq 0
n_ok=$(sql g.db "select count(*) from results where status='ok' and median_ns > 0 and samples >= 10 and err_rel_l2 = 0")
check "8 variants verified and timed ($n_ok)" test "$n_ok" -eq 8
finish
