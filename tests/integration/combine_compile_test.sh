#!/usr/bin/env bash
# moe.combine (recipes/moe/combine.lua, templates/moe/combine.cuh): the whole recipe compiles with
# NVRTC (no GPU): every config of every problem, the reference with them, without spills; the
# pruning of the tuned problems says why; a bundle of the results (synthetic times) is portable,
# ships the fallback, and libtunert serves problems that were not tuned (other T, H, top_k) and
# refuses those outside the domain.
. "$(dirname "$0")/lib.sh"
"$TUNE" run "$SRC/recipes/moe/combine.lua" --compile-only --arch sm_90a --db c.db >run.txt 2>&1
check "the recipe compiles" test $? -eq 0
check "the space after constraints" contains run.txt "moe.combine: 136 of 144 configs satisfy the constraints"
check "top-2: LOADS past top_k pruned" contains run.txt "mixtral_t4096h4096k2 {\"H\":4096,\"T\":4096,\"top_k\":2}: 43 configs"
check "the pruning's reason" contains run.txt "more slots in flight than top_k"
check "every problem's configs" contains run.txt "moe.combine: 1347 results, 1347 compiled (compile-only, not timed)"

n_err=$(sql c.db "select count(*) from results where status <> 'ok' and error_text <> 'compile-only'")
check "no compile errors ($n_err)" test "$n_err" = 0
n_spill=$(sql c.db "select count(*) from results where registers = 0 or spill_stores > 0")
check "compiled without spills ($n_spill spilled or unknown)" test "$n_spill" = 0
n_name=$(sql c.db "select count(distinct lowered_name) from binaries where lowered_name = 'moe_combine'")
check "the kernel is moe_combine" test "$n_name" = 1

# the nearest tuned problem of {T 7, H 2048, top_k 6} is qwen3_t16h4096k8: its winner made known
synth_ok c.db qwen3_t16h4096k8 '{"VEC_BYTES":16,"BLOCK":64,"TOKENS":2,"VECS":1,"LOADS":2}'
"$TUNE" bundle --recipe moe.combine --db c.db -o c.bundle --arch sm_90a --no-ptx >bundle.txt 2>&1
check "bundle written" test $? -eq 0
check "no exact-only entry" lacks bundle.txt "exact-only"
check "the fallback ships" contains bundle.txt "fallback ("

serve() { "$TUNERT_INSPECT" c.bundle --arch sm_90a --select moe.combine "$1" >"$2" 2>&1; }
serve H=2048,T=7,top_k=6 other.txt
check "a problem not tuned is served" contains other.txt "kind:     nearest"
check "by the variant of the nearest problem" contains other.txt "tuned for: qwen3_t16h4096k8"
# two tokens of 32 threads a block, 256 hidden elements a token: ceil(7 / 2) x 2048 / 256
check "its grid covers T and H" contains other.txt "moe_combine grid (4, 8, 1) block (64, 1, 1)"
serve H=4100,T=3,top_k=2 odd.txt
check "H no multiple of 8: outside the domain" contains odd.txt "outside the domain of moe.combine"
finish
