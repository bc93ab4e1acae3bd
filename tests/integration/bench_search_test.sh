#!/usr/bin/env bash
# tune-bench-search (tools/bench_search/) replays a recorded space for each strategy and prints P
# scores; tune db export writes Kernel Tuner's cache format; `tune bench-search` points at the tool.
. "$(dirname "$0")/lib.sh"
BENCH_SEARCH="${BENCH_SEARCH:?set BENCH_SEARCH to the tune-bench-search binary}"
"$BENCH_SEARCH" "$SRC/recipes/copy.lua" --device "replay:$SRC/data/recorded/copy.db" --repeats 3 \
  --strategies random,bayes,bayes:cold --problem 64MiB >bench.txt 2>&1
check "bench-search exits 0" test $? -eq 0
check "bench-search prints the bayes row" contains bench.txt "bayes"
check "bench-search prints the goal line" contains bench.txt "goal at 10% of the evaluations"
check "bench-search prints B98 and W90 per strategy" grep -q "^  bayes:cold *B98 *>*[0-9]* .*W90" bench.txt
"$BENCH_SEARCH" "$SRC/recipes/copy.lua" --device "replay:$SRC/data/recorded/copy.db" --repeats 3 \
  --strategies nosuch >bad.txt 2>&1
check "unknown strategy fails" test $? -ne 0
"$BENCH_SEARCH" "$SRC/recipes/copy.lua" --repeats abc >badrep.txt 2>&1
check "a non-integer --repeats exits 2" test $? -eq 2
check "and names the option and its value" contains badrep.txt "tune-bench-search: --repeats abc: not an integer"
"$TUNE" bench-search "$SRC/recipes/copy.lua" >moved.txt 2>&1
check "tune bench-search is no verb of tune any more (rc 2)" test $? -eq 2
check "it names the tool that replaced it" contains moved.txt "build/tools/tune-bench-search"
"$TUNE" db export --db "$SRC/data/recorded/copy.db" --format kernel_tuner --recipe copy --problem 64MiB -o kt.json >exp.txt 2>&1
check "db export exits 0" test $? -eq 0
n=$(python3 -c "import json; d=json.load(open('kt.json')); print(len(d['cache']))")
check "the export holds every recorded config of the problem ($n)" test "$n" = "$(sql "$SRC/data/recorded/copy.db" "select count(*) from results r join problems p on p.id=r.problem_id where p.name='64MiB'")"
# A recording with peer results (a comparison in the same file): the peers are no configs of the space
VL="$SRC/data/recorded/attention.varlen.db"
"$TUNE" db export --db "$VL" --format kernel_tuner --recipe attention.varlen --problem b128t512hq32kv8d128c -o vl.json >vlx.txt 2>&1
check "db export of a recording with peers exits 0 ($(head -c 200 vlx.txt))" test $? -eq 0
n=$(python3 -c "import json; d=json.load(open('vl.json')); print(len(d['cache']))" 2>/dev/null)
check "... and holds the recipe's configs only ($n)" test "$n" = "$(sql "$VL" "select count(distinct c.id) from results r join problems p on p.id=r.problem_id join configs c on c.id=r.config_id where p.name='b128t512hq32kv8d128c' and c.origin not like 'peer:%' and not (r.status='skipped' and r.error_text not like 'pruned: %' and r.error_text <> 'compile-only')")"
# Recordings made before and after gemm.fp8 gained PART_BUFFERS, merged: the older configs lack the
# key and the database cannot say their value; export refuses rather than drop the parameter
"$TUNE" db merge mixed.db "$SRC/data/recorded/gemm.fp8.db" "$SRC/data/recorded/h200/gemm.fp8.db" --no-binaries >merge.txt 2>&1
"$TUNE" db export --db mixed.db --format kernel_tuner --recipe gemm.fp8 --problem m1000n1040k1072_block -o mixed.json >mixx.txt 2>&1
check "db export of configs with and without a parameter fails" test $? -ne 0
check "... naming the parameter" contains mixx.txt "do not all name parameter PART_BUFFERS"
"$TUNE" db export --db "$SRC/data/recorded/h200/gemm.fp8.db" --format kernel_tuner --recipe gemm.fp8 --problem m1000n1040k1072_block -o h200.json >h200x.txt 2>&1
check "... while each recording exports on its own" test $? -eq 0
# Configs the recipe rejects for a problem (applies) are not part of its space: not in the
# benchmark's space, not in the export, and no budget is spent on them by tune run.
PS="$SRC/data/recorded/attention.prefill_sm90.db"
"$BENCH_SEARCH" "$SRC/recipes/attention.lua" --device "replay:$PS" --repeats 2 --strategies random \
  --problem b4h32s4096d128 >ps.txt 2>&1
check "bench-search on prefill_sm90 exits 0" test $? -eq 0
n_app=$(python3 - "$PS" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("""select count(*) from results r join problems p on p.id = r.problem_id
  where p.name = 'b4h32s4096d128' and not (r.status = 'skipped' and r.error_text not like 'pruned: %'
  and r.error_text <> 'compile-only')""").fetchone()[0])
PY
)
check "bench-search's space is the $n_app configs the recipe does not reject" grep -q "b4h32s4096d128 .*: $n_app configs recorded on .* more rejected by the recipe" ps.txt
"$TUNE" db export --db "$PS" --format kernel_tuner --recipe attention.prefill_sm90 --problem b4h32s4096d128 -o ps.json >psx.txt 2>&1
check "the export leaves the rejected configs out" test "$(python3 -c "import json; print(len(json.load(open('ps.json'))['cache']))")" = "$n_app"
"$TUNE" run "$SRC/recipes/attention/prefill_sm90.lua" --device "replay:$PS" --db psrun.db --problem b4h32s4096d128 --budget 10 --quiet >psrun.txt 2>&1
check "tune run --budget 10 on prefill_sm90 exits 0" test $? -eq 0
check "--budget 10 buys 10 evaluated configs, none rejected" test "$(sql psrun.db "select count(*) from results r join recipes c on c.id = r.recipe_id where c.name = 'attention.prefill_sm90' and r.status <> 'skipped'")" = 10
# Warm start: the second problem of a run starts from the first one's best, unless --no-warm-start
G="$SRC/data/recorded/gemm.db"
"$TUNE" run "$SRC/recipes/gemm.lua" --device "replay:$G" --db warm.db --problem m8192n8192k8192_row \
  --problem m8192n8192k8192_col --budget 8 >warm.txt 2>&1
check "tune run with a warm start exits 0" test $? -eq 0
check "the second problem starts warm" test "$(grep -c '^warm start: 1 config' warm.txt)" = 1
"$TUNE" run "$SRC/recipes/gemm.lua" --device "replay:$G" --db cold.db --problem m8192n8192k8192_row \
  --problem m8192n8192k8192_col --budget 8 --no-warm-start >cold.txt 2>&1
check "--no-warm-start: no warm start" test "$(grep -c '^warm start' cold.txt)" = 0
check "bench-search's default rows include bayes:cold" contains bench.txt "bayes:cold"
"$BENCH_SEARCH" "$SRC/recipes/copy.lua" --device "replay:$SRC/data/recorded/copy.db" --repeats 2 \
  --strategies bayes:warm >badsfx.txt 2>&1
check "an unknown strategy suffix fails" test $? -eq 2
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
