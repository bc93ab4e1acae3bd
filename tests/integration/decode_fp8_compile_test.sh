#!/usr/bin/env bash
# attention.decode_fp8 (recipes/attention/decode_fp8.lua, templates/attention/decode.cuh KV_FP8=1):
# the recipe loads with its domain and fallback, and one variant of each kind compiles with NVRTC
# (no GPU): the fallback (8-byte loads), the bit-move conversion, 4-byte loads, the cp.async ring,
# the register double buffer with one query head per block, and the tensor-core path (MMA 1:
# register double buffer, bit moves, cp.async ring), for GQA 4 and 8; and a bundle of them
# (synthetic times) is portable. The whole space is compiled by
# `tune run recipes/attention/decode_fp8.lua --compile-only`.
. "$(dirname "$0")/lib.sh"
R="$SRC/recipes/attention/decode_fp8.lua"
compile() { # compile OUT PROBLEM ONLY...
  local out=$1 prob=$2; shift 2
  local only=()
  for o in "$@"; do only+=(--only "$o"); done
  "$TUNE" run "$R" --compile-only --arch sm_90a --db d.db --problem "$prob" "${only[@]}" >"$out" 2>&1
}
KINDS=(SPLITS=4,BLOCK_N=64,WARPS=4,VEC_BYTES=8,GQA_PACK=1,STAGES=1,KV_RING=0,DEQUANT=0,MMA=0
       SPLITS=8,BLOCK_N=64,WARPS=4,VEC_BYTES=8,GQA_PACK=1,STAGES=1,KV_RING=0,DEQUANT=1,MMA=0
       SPLITS=16,BLOCK_N=32,WARPS=4,VEC_BYTES=4,GQA_PACK=1,STAGES=1,KV_RING=0,MMA=0
       SPLITS=32,BLOCK_N=64,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=3,MMA=0
       SPLITS=1,BLOCK_N=64,WARPS=8,VEC_BYTES=16,GQA_PACK=0,STAGES=2,KV_RING=0,MMA=0
       SPLITS=8,BLOCK_N=64,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=2,KV_RING=0,MMA=1
       SPLITS=4,BLOCK_N=32,WARPS=2,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=0,DEQUANT=1,MMA=1
       SPLITS=32,BLOCK_N=64,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=3,MMA=1)

compile gqa4.txt b32hq32hkv8d128p16x256 "${KINDS[@]}"
check "GQA 4 compiles" test $? -eq 0
check "the space after constraints" contains gqa4.txt "attention.decode_fp8: 966 of 13824 configs satisfy the constraints"
# at D 128 the byte budgets already keep BLOCK_N a multiple of the row groups: requires reject none
check "every constrained config runs D 128" grep -q '"page_size":16}: [0-9]* configs, backend' gqa4.txt
check "none rejected" lacks gqa4.txt "rejected"
check "nine variants compiled" contains gqa4.txt "compile: 9 compiled"

compile gqa8.txt b8hq64hkv8d128p32x1024m1 "${KINDS[@]}"
check "GQA 8, mixed lengths compiles" test $? -eq 0
check "nine more variants compiled" contains gqa8.txt "compile: 9 compiled"

n_err=$(sql d.db "select count(*) from results where status = 'compile_error'")
check "no compile errors ($n_err)" test "$n_err" = 0
n_ok=$(sql d.db "select count(*) from results where error_text = 'compile-only' and registers > 0")
check "eighteen compiled results ($n_ok)" test "$n_ok" = 18
n_fp8=$(sql d.db "select count(*) from problems where recipe_name = 'attention.decode_fp8' and dims_json like '%\"min_len\":1,%'")
check "mixed lengths are a problem dim ($n_fp8)" test "$n_fp8" = 1

# Every field is an expression: bundled entries (SYNTHETIC times, lib.sh synth_ok) serve nearby
# problems, and the fallback is shipped for each set of defines (GQA 4, GQA 8).
synth_ok d.db
"$TUNE" bundle --recipe attention.decode_fp8 --db d.db -o d.bundle --arch sm_90a --no-ptx >bundle.txt 2>&1
check "bundle written" test $? -eq 0
check "no exact-only entry" lacks bundle.txt "exact-only"
n_fb=$(grep -c "^  fallback (" bundle.txt)
check "two fallback entries ($n_fb)" test "$n_fb" = 2
finish
