#!/usr/bin/env bash
# moe.swiglu_fp8 and moe.swiglu_fp8_static (recipes/moe/swiglu_fp8.lua, templates/moe/swiglu_fp8.cuh):
# the whole space compiles with NVRTC for sm_90a (no GPU): every config of every problem of both
# recipes, the reference with them, without spills; the pruning says why; a bundle of the results
# (synthetic times) is portable and ships the fallback, and libtunert serves problems that were not
# tuned (other T and N, each mode) and refuses those outside the domain.
. "$(dirname "$0")/lib.sh"
"$TUNE" run "$SRC/recipes/moe/swiglu_fp8.lua" --compile-only --arch sm_90a --db s.db >run.txt 2>&1
check "the recipes compile" test $? -eq 0
check "dynamic space" contains run.txt "moe.swiglu_fp8: 224 of 384 configs satisfy the constraints"
check "static space" contains run.txt "moe.swiglu_fp8_static: 168 of 192 configs satisfy the constraints"
check "group mode: nothing cached" contains run.txt "one pass over the row: nothing to cache"
check "the register model prunes" contains run.txt "does not fit the register cap"
check "idle threads pruned" contains run.txt "most threads idle"
check "token mode: no split rows" contains run.txt "token: the row's scale needs all of it in one block"
check "many rows: no split" contains run.txt "enough rows to fill the SMs unsplit"
check "every dynamic problem's configs" contains run.txt "moe.swiglu_fp8: 863 results, 863 compiled (compile-only, not timed)"
check "every static problem's configs" contains run.txt "moe.swiglu_fp8_static: 249 results, 249 compiled (compile-only, not timed)"

n_err=$(sql s.db "select count(*) from results where status <> 'ok' and error_text <> 'compile-only'")
check "no compile errors ($n_err)" test "$n_err" = 0
n_spill=$(sql s.db "select count(*) from results where registers = 0 or spill_stores > 0")
check "compiled without spills ($n_spill spilled or unknown)" test "$n_spill" = 0
n_cached=$(sql s.db "select count(*) from results r join configs c on c.id = r.config_id join problems p on p.id = r.problem_id
  where c.params_json like '%\"CACHE_ROW\":1%' and p.name like '%_token'")
check "token mode's cached rows compile ($n_cached)" test "$n_cached" -ge 10
n_split=$(sql s.db "select count(*) from results r join configs c on c.id = r.config_id join problems p on p.id = r.problem_id
  where c.params_json not like '%\"SPLIT\":1%' and (p.name like '%_group' or p.name like '%_static')")
check "split rows compile in the group and static modes ($n_split)" test "$n_split" -ge 100
n_name=$(sql s.db "select group_concat(lowered_name) from (select distinct lowered_name from binaries order by 1)")
check "the kernel and its reference ($n_name)" test "$n_name" = "swiglu_fp8_kernel,swiglu_fp8_reference"

# every field is an expression: bundled entries serve other problems, one fallback per define set
synth_ok s.db
"$TUNE" bundle --recipe moe.swiglu_fp8,moe.swiglu_fp8_static --db s.db -o s.bundle --arch sm_90a --no-ptx >bundle.txt 2>&1
check "bundle written" test $? -eq 0
check "no exact-only entry" lacks bundle.txt "exact-only"
check "a fallback entry" contains bundle.txt "fallback ("

# quant is an enum dim: its index among the recipe's values (moe.swiglu_fp8: group 0, token 1)
serve() { "$TUNERT_INSPECT" s.bundle --arch sm_90a --select "$1" "$2" >"$3" 2>&1; }
serve moe.swiglu_fp8 N=2560,T=300,quant=0 group.txt
check "group: a problem not tuned is served" contains group.txt "kind:     nearest"
serve moe.swiglu_fp8 N=4096,T=7,quant=1 token.txt
check "token: a problem not tuned is served" contains token.txt "kind:     nearest"
serve moe.swiglu_fp8_static N=7168,T=100,quant=0 static.txt
check "static: a problem not tuned is served" contains static.txt "kind:     nearest"
serve moe.swiglu_fp8 N=1004,T=3,quant=0 odd.txt
check "N no multiple of 8: outside the domain" contains odd.txt "outside the domain of moe.swiglu_fp8"
serve moe.swiglu_fp8 N=2048,T=8,quant=2 wrong.txt
check "no third value of quant in the dynamic recipe" lacks wrong.txt "kind:     "
finish
