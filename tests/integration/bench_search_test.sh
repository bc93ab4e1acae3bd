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
# Kernel Tuner's simulation on that cache, only the goal's budget (where kernel_tuner is installed)
if python3 -c "import kernel_tuner" 2>/dev/null; then
  python3 "$SRC/tools/bench/kernel_tuner_sim.py" kt.json --repeats 2 --strategies random_sample --jobs 1 \
    --eval-budgets 10 --no-time --json ktsim.json >ktsim.txt 2>&1
  check "kernel_tuner_sim exits 0" test $? -eq 0
  check "kernel_tuner_sim: only the 10 % budget ran, the rest say not run" python3 -c '
import json, sys
d = json.load(open("ktsim.json"))
s = d["problems"][0]["strategies"]["random_sample"]
ok = [isinstance(c, dict) and c["median"] is not None for c in s["evals"]]
sys.exit(0 if ok == [False, False, False, True, False, False] and s["evals"][0] == "not run"
         and all(c == "not run" for c in s["time"]) and len(d["not_run"]) == 6 and d["runs"] == 2 else 1)'
  check "kernel_tuner_sim prints not run" contains ktsim.txt "not run"
else
  echo "kernel_tuner not installed: its simulation is not tested here"
fi
finish
