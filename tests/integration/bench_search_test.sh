#!/usr/bin/env bash
# bench-search replays a recorded space for each strategy and prints P scores;
# db export writes Kernel Tuner's cache format.
. "$(dirname "$0")/lib.sh"
"$TUNE" bench-search "$SRC/recipes/copy.lua" --device "replay:$SRC/data/recorded/copy.db" --repeats 3 \
  --strategies random,bayes --problem 64MiB >bench.txt 2>&1
check "bench-search exits 0" test $? -eq 0
check "bench-search prints the bayes row" contains bench.txt "bayes"
check "bench-search prints the goal line" contains bench.txt "goal at 10% of the evaluations"
"$TUNE" bench-search "$SRC/recipes/copy.lua" --device "replay:$SRC/data/recorded/copy.db" --repeats 3 \
  --strategies nosuch >bad.txt 2>&1
check "unknown strategy fails" test $? -ne 0
"$TUNE" db export --db "$SRC/data/recorded/copy.db" --format kernel_tuner --recipe copy --problem 64MiB -o kt.json >exp.txt 2>&1
check "db export exits 0" test $? -eq 0
n=$(python3 -c "import json; d=json.load(open('kt.json')); print(len(d['cache']))")
check "the export holds every recorded config of the problem ($n)" test "$n" = "$(sql "$SRC/data/recorded/copy.db" "select count(*) from results r join problems p on p.id=r.problem_id where p.name='64MiB'")"
finish
