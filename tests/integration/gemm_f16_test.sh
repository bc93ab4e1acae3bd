#!/usr/bin/env bash
# recipes/gemm/f16.lua (gemm.f16, gemm.f16.splitk, gemm.f16.gemv_rows: fp16 a and b through
# templates/gemm/f16.cuh and gemv_rows_f16.cuh) without a GPU: the recipes load from gemm.lua's tables,
# offer the mma.sync, wgmma and GEMV paths, take f16 tensors, and their variants compile for sm_90a as
# kernels named gemm_f16 / gemv_rows_f16, without local memory; by default `tune run` replays
# data/recorded/gemm.f16.db (the file is recipes/gemm/f16.lua), an exhaustive run measures the
# warm-start configs once, and a run on a database with bf16 results of the same GPU starts from their
# winners. (That the fp16 GEMVs compute with fp16 inputs is checked on the GPU, where every variant is
# verified against reference_f16.cuh: data/recorded/gemm.f16.db, 1309 of 1309.)
. "$(dirname "$0")/lib.sh"
BENCH_SEARCH="${BENCH_SEARCH:?set BENCH_SEARCH to the tune-bench-search binary}"
BUILD="${BUILD:?set BUILD to the build tree}"
R="$SRC/recipes/gemm/f16.lua"
P=m128n8192k8192_row

"$BUILD/tools/gemm_space" "$R" > space.txt 2>&1
check "gemm_space exits 0" test $? -eq 0
check "gemm.f16 listed" contains space.txt "^gemm.f16: "
check "gemm.f16.splitk listed" contains space.txt "^gemm.f16.splitk: "
check "gemm.f16.gemv_rows listed" contains space.txt "^gemm.f16.gemv_rows: "
"$BUILD/tools/gemm_space" "$R" $P > p.txt 2>&1
check "wgmma variants" contains p.txt '"PATH":1,'
check "mma.sync variants" contains p.txt '"PATH":0,'
check "no GEMV variants at M = 128" lacks p.txt '"PATH":2,'
"$BUILD/tools/gemm_space" "$R" m1n8192k8192_col > p1.txt 2>&1
check "GEMV variants at M = 1" contains p1.txt '"PATH":2,'

# the two GEMVs (gemm.cuh's PATH 2 through f16.cuh, gemv_rows_f16.cuh) compile
"$TUNE" run "$R" --compile-only --db g.db --jobs 2 --quiet --problem m1n8192k8192_row --only PATH=2 --only GR_WARPS=8 \
  > gemv.txt 2>&1
check "GEMV compile-only exits 0" test $? -eq 0
check "gemv_rows_f16 compiled" test "$(sql g.db "SELECT count(*) FROM binaries WHERE ok = 1 AND lowered_name = 'gemv_rows_f16'")" -ge 1
check "GEMV path compiled" test "$(sql g.db "SELECT count(*) FROM binaries WHERE ok = 1 AND options LIKE '%PATH=2%'")" -ge 1
check "no GEMV compile errors" test "$(sql g.db "SELECT count(*) FROM binaries WHERE ok = 0")" -eq 0

"$TUNE" run "$R" --compile-only --db c.db --jobs 2 --quiet --problem $P --only USE_TMA=1 > compile.txt 2>&1
check "compile-only exits 0" test $? -eq 0
check "both recipes compiled" test "$(sql c.db "SELECT count(DISTINCT rc.name) FROM results r JOIN recipes rc ON rc.id = r.recipe_id")" -eq 2
check "variants compiled" test "$(sql c.db "SELECT count(*) FROM binaries WHERE ok = 1")" -ge 20
check "no compile errors" test "$(sql c.db "SELECT count(*) FROM binaries WHERE ok = 0")" -eq 0
check "no local memory or spills" \
  test "$(sql c.db "SELECT count(*) FROM binaries WHERE local_bytes > 0 OR spill_stores > 0 OR spill_loads > 0")" -eq 0
check "kernels named gemm_f16" test "$(python3 -c 'import sqlite3,sys
c=sqlite3.connect(sys.argv[1])
print(sum(b"gemm_f16" in (r[0] or b"") for r in c.execute("SELECT cubin FROM binaries WHERE ok = 1")))' c.db)" -ge 20

if [ -f "$SRC/data/recorded/gemm.f16.db" ]; then
  "$TUNE" run "$R" --db r.db --problem $P --budget 4 > replay.txt 2>&1
  check "default replay exits 0" test $? -eq 0
  check "default replay reads gemm.f16.db" contains replay.txt "replaying gemm.f16 from .*data/recorded/gemm.f16.db"
  # exhaustive after a warm start: the warm configs are not proposed again (nor counted as resumed)
  "$TUNE" run "$R" --db x.db --strategy exhaustive --problem m1n8192k8192_col --problem m1n14336k4096_col > ex.txt 2>&1
  check "exhaustive replay exits 0" test $? -eq 0
  check "the second problem starts warm" contains ex.txt "warm start: 1 config"
  check "every config once, none resumed" contains ex.txt "^gemm.f16: 40 results, 40 ok; 0 resumed"
fi
H100="$SRC/data/recorded/h100/gemm.db"
if [ -f "$SRC/data/recorded/gemm.f16.db" ] && [ -f "$H100" ]; then
  # a database holding bf16 results of the same GPU (the H100 recording): the fp16 run starts from the
  # bf16 winner of the same shape (same parameters, problem distance 0), for both recipes
  cp "$H100" bf16.db && chmod u+w bf16.db
  "$TUNE" run "$R" --db bf16.db --budget 1 --problem m1n8192k8192_row > cross.txt 2>&1
  check "run after bf16 exits 0" test $? -eq 0
  for pair in "gemm gemm.f16" "gemm.splitk gemm.f16.splitk"; do
    set -- $pair
    want=$(sql bf16.db "SELECT c.hash FROM results r JOIN configs c ON c.id = r.config_id JOIN recipes rc ON rc.id = r.recipe_id
      JOIN problems p ON p.id = r.problem_id WHERE rc.name = '$1' AND p.name = 'm1n8192k8192_row' AND r.status = 'ok'
      ORDER BY r.median_ns LIMIT 1")
    got=$(sql bf16.db "SELECT c.hash FROM results r JOIN configs c ON c.id = r.config_id JOIN recipes rc ON rc.id = r.recipe_id
      WHERE rc.name = '$2'")
    check "$2 starts from $1's winner of the same shape" test -n "$want" -a "$got" = "$want"
  done
  # bench-search --warm-db simulates the same: at 1 % of the space (1 evaluation) bayes is at the
  # optimum with the bf16 database (the two recordings share the winner of this shape), not without
  first() { python3 -c 'import json,sys
print(min(p["strategies"]["bayes"]["evals"][0]["perf_median"] for p in json.load(open(sys.argv[1]))))' "$1"; }
  "$BENCH_SEARCH" "$R" --warm-db "$H100" --problem m128n14336k4096_col --repeats 3 --strategies bayes \
    --jobs 1 --json > bw.json 2> bw.err
  check "bench-search --warm-db exits 0" test $? -eq 0
  check "with the bf16 database: the optimum at 1 evaluation" test "$(first bw.json)" = "1.0"
  "$BENCH_SEARCH" "$R" --problem m128n14336k4096_col --repeats 3 --strategies bayes --jobs 1 --json > bc.json 2> bc.err
  check "without it: not" test "$(first bc.json)" != "1.0"
  "$BENCH_SEARCH" "$R" --warm-db nowhere.db --repeats 1 > bn.txt 2>&1
  check "--warm-db of a missing file fails" test $? -ne 0
  check "and says why" contains bn.txt "no such database"
fi

finish
