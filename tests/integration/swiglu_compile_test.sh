#!/usr/bin/env bash
# moe.grouped_swiglu (recipes/moe/swiglu.lua, templates/gemm/grouped_sm90.cuh SWIGLU=1): the recipe
# loads with its space, domain and fallback, and one variant of each kind compiles with NVRTC (no
# GPU) without spills: the fallback, the widest tile (128 outputs through the TMA epilogue), ping-pong,
# 64-column tiles (32 outputs, direct stores), and the masked layout on the tail problem; a bundle of
# them (synthetic times) is portable and ships the fallback. The whole space is compiled by
# `tune run recipes/moe/swiglu.lua --compile-only`.
. "$(dirname "$0")/lib.sh"
R="$SRC/recipes/moe/swiglu.lua"
compile() { # compile OUT PROBLEM ONLY...
  local out=$1 prob=$2; shift 2
  local only=()
  for o in "$@"; do only+=(--only "$o"); done
  "$TUNE" run "$R" --compile-only --arch sm_90a --db s.db --problem "$prob" "${only[@]}" >"$out" 2>&1
}

compile prefill.txt e8n14336k4096t8192m1 \
  BLOCK_M=64,BLOCK_N=128,CONSUMERS=1,STAGES=4,WS=1,PERSISTENT=0,RASTER=1 \
  BLOCK_M=128,BLOCK_N=256,CONSUMERS=2,STAGES=3,WS=1,PERSISTENT=1,RASTER=8 \
  BLOCK_M=128,BLOCK_N=128,CONSUMERS=2,STAGES=4,WS=2,PERSISTENT=1,RASTER=8 \
  BLOCK_M=128,BLOCK_N=64,CONSUMERS=2,STAGES=5,WS=1,PERSISTENT=0,RASTER=1
check "prefill variants compile" test $? -eq 0
check "the space after constraints" contains prefill.txt "moe.grouped_swiglu: 62 of 288 configs satisfy the constraints"
check "four variants compiled" contains prefill.txt "compile: 4 compiled"

compile decode.txt e64n1408k2048t64m0 BLOCK_M=64,BLOCK_N=256,CONSUMERS=1,STAGES=4,WS=1,PERSISTENT=1,RASTER=1
check "decode variant compiles" test $? -eq 0
check "decode: 64-row tiles only" contains decode.txt "rejected 36: decode: tiles of 64 rows"

compile masked.txt e8n1000k1032cap300m0 BLOCK_M=128,BLOCK_N=128,CONSUMERS=1,STAGES=4,WS=1,PERSISTENT=0,RASTER=1
check "masked tail variant compiles" test $? -eq 0
check "masked variant compiled" contains masked.txt "compile: 1 compiled"

n_ok=$(sql s.db "select count(*) from results where error_text = 'compile-only' and registers > 0 and spill_stores = 0")
check "compiled without spills ($n_ok of 6)" test "$n_ok" = 6
n_err=$(sql s.db "select count(*) from results where status = 'compile_error'")
check "no compile errors ($n_err)" test "$n_err" = 0
n_name=$(sql s.db "select count(distinct lowered_name) from binaries where lowered_name = 'grouped_swiglu_bf16'")
check "the kernel is grouped_swiglu_bf16" test "$n_name" = 1

# Every field is an expression: bundled entries (SYNTHETIC times, lib.sh synth_ok) serve nearby
# problems, and the fallback ships for each layout.
synth_ok s.db
"$TUNE" bundle --recipe moe.grouped_swiglu,moe.grouped_swiglu_masked --db s.db -o s.bundle --arch sm_90a --no-ptx >bundle.txt 2>&1
check "bundle written" test $? -eq 0
check "no exact-only entry" lacks bundle.txt "exact-only"
n_fb=$(grep -c "^  fallback (" bundle.txt)
check "two fallback entries, one per layout ($n_fb)" test "$n_fb" = 2
finish
