#!/usr/bin/env bash
# tune run's progress output when stdout is not a terminal: one plain line per variant counted
# per problem against its budget, and a plain "progress:" line (done/total, ETA, best so far with
# its bandwidth) about every 10 %; no terminal escapes.
. "$(dirname "$0")/lib.sh"
REC="$SRC/data/recorded/transpose.db"
"$TUNE" run "$SRC/recipes/transpose.lua" --device "replay:$REC" --db p.db --budget 20 --seed 3 >run.txt 2>&1
check "replay run exits 0" test $? -eq 0
n_prob=$(grep -c '^== ' run.txt)
check "problems run ($n_prob)" test "$n_prob" -ge 2
# every problem counts from 1 to its budget of 20
check "a problem's first variant is 1/20" test "$(grep -c '^\[ 1/20\] ' run.txt)" -eq "$n_prob"
check "a problem's last variant is 20/20" test "$(grep -c '^\[20/20\] ' run.txt)" -eq "$n_prob"
lacks run.txt '^\[21/'
check "no count past the budget" test $? -eq 0
# plain progress lines at 2, 4, ..., 20 of 20 on each problem
check "ten progress lines per problem" test "$(grep -c '^progress: ' run.txt)" -eq $((10 * n_prob))
check "progress line: done/total, ETA, best with GB/s" \
  grep -qE '^progress: 20/20  ETA 0m00s  best +[0-9.]+ us +[0-9.]+ GB/s' run.txt
check "no terminal escapes" test "$(grep -c $'\033' run.txt)" -eq 0
# --quiet: neither the per-variant lines nor the progress lines
"$TUNE" run "$SRC/recipes/transpose.lua" --device "replay:$REC" --db q.db --budget 20 --seed 3 --quiet >quiet.txt 2>&1
check "quiet run exits 0" test $? -eq 0
lacks quiet.txt '^progress: '
check "quiet: no progress lines" test $? -eq 0
finish
