#!/usr/bin/env bash
# ptxas's serialized wgmma, which no resource count shows (tuner/compile.c
# tune_compile_wgmma_serialized), on any CPU (NVRTC only):
#  - the fixture's SERIALIZED 1 variant (wgmma issued from a function that is not inlined) makes
#    `tune run` print the warning with that variant; SERIALIZED 0 compiles clean;
#  - for each tensor-core recipe, the fastest recorded config of its longest-running problem (the
#    tensor-core path where a recipe has others) compiles with its wgmma pipelined.
. "$(dirname "$0")/lib.sh"
"$TUNE" run "$SRC/tests/fixtures/recipes/wgmma_serialized.lua" --compile-only --arch sm_90a --db w.db >w.txt 2>&1
check "fixture compiles" test $? -eq 0
check "warning with the count and the variant" contains w.txt 'warning: ptxas serialized the wgmma of 1 variant(s), e.g. {"SERIALIZED":1}'
n_bad=$(sql w.db "select count(*) from binaries where options like '%SERIALIZED=1%' and log like '%wgmma.mma_async instructions are serialized%'")
check "the serialized variant's log says so ($n_bad)" test "$n_bad" = 1
n_clean=$(sql w.db "select count(*) from binaries where options like '%SERIALIZED=0%' and log not like '%Potential Performance Loss%'")
check "the inline variant's log does not ($n_clean)" test "$n_clean" = 1

# DB: the problem and --only of the fastest ok config of the recording's longest-running problem (the
# largest: the tensor-core path where a recipe has others)
best_only() {
  sql "$1" "select p.name, c.params_json, r.median_ns from results r join problems p on p.id = r.problem_id
            join configs c on c.id = r.config_id where r.status = 'ok' and c.origin not like 'peer:%'" |
    python3 -c 'import json, sys
best = {}
for line in sys.stdin:
    p, rest = line.rstrip("\n").split("|", 1)
    c, ns = rest.rsplit("|", 1)
    if p not in best or float(ns) < best[p][0]: best[p] = (float(ns), c)
p = max(best, key=lambda k: best[k][0])
print(p, ",".join("%s=%s" % kv for kv in json.loads(best[p][1]).items()))'
}
for rd in gemm.lua:gemm.db gemm/skinny.lua:h200/gemm.skinny.db gemm/fp8.lua:h200/gemm.fp8.db gemm/fp8_skinny.lua:gemm.fp8_skinny.db \
          moe/grouped.lua:h200/moe.grouped.db moe/swiglu.lua:h200/moe.grouped_swiglu.db \
          attention/prefill_sm90.lua:h200/attention.prefill_sm90.db attention/varlen.lua:h200/attention.varlen.db; do
  recipe=${rd%%:*} db=${rd#*:}
  read -r prob only < <(best_only "$SRC/data/recorded/$db")
  out=$(basename "$recipe" .lua)
  "$TUNE" run "$SRC/recipes/$recipe" --compile-only --arch sm_90a --db "$out.db" --problem "$prob" --only "$only" >"$out.txt" 2>&1
  check "$recipe $prob compiles" contains "$out.txt" "compile: [1-9][0-9]* compiled"
  check "$recipe $prob: wgmma pipelined" lacks "$out.txt" "warning: ptxas serialized"
done
finish
