#!/usr/bin/env bash
# moe.grouped_fp8 / moe.grouped_fp8_masked (recipes/moe/grouped_fp8.lua, templates/gemm/grouped_fp8_sm90.cuh
# on gemm/fp8_mainloop_sm90.cuh): the recipes load with the space gemm.fp8 shares, the tile rule by
# rows per expert rejects what it should, one variant of each kind compiles with NVRTC (no GPU)
# without spills in every scaling and both layouts, and a bundle of them (synthetic times) is
# portable and ships a fallback per layout. The whole space compiles with
# `tune run recipes/moe/grouped_fp8.lua --compile-only`.
. "$(dirname "$0")/lib.sh"
R="$SRC/recipes/moe/grouped_fp8.lua"
compile() { # compile OUT PROBLEM ONLY...
  local out=$1 prob=$2; shift 2
  local only=()
  for o in "$@"; do only+=(--only "$o"); done
  "$TUNE" run "$R" --compile-only --arch sm_90a --db g.db --problem "$prob" "${only[@]}" >"$out" 2>&1
}
LARGE=BLOCK_M=128,BLOCK_N=128,CONSUMERS=2,STAGES=6,FAST_ACCUM=0,PART_BUFFERS=2,PERSISTENT=1,RASTER=8,RING_POS=1
DECODE=BLOCK_M=64,BLOCK_N=64,CONSUMERS=1,STAGES=4,FAST_ACCUM=0,PART_BUFFERS=1,PERSISTENT=0,RASTER=1,RING_POS=0

compile block.txt e256n4096k7168t8192m1_block "$LARGE" "$DECODE"
check "block-scaled variants compile" test $? -eq 0
check "the space gemm.fp8 has" contains block.txt "moe.grouped_fp8: 68 of 1536 configs satisfy the constraints"
check "two variants compiled" contains block.txt "compile: 2 compiled"

compile decode.txt e256n4096k7168t512m1_row "$DECODE"
check "decode row-scaled variant compiles" test $? -eq 0
check "decode: 64-row tiles only" contains decode.txt "rejected 32: decode: tiles of 64 rows"

compile tensor.txt e8n4096k14336t4096m1_tensor "$LARGE"
check "per-tensor variant compiles" test $? -eq 0

compile masked.txt e8n1040k1072cap300m0_block "$DECODE"
check "masked tail variant compiles" test $? -eq 0
check "masked variant compiled" contains masked.txt "compile: 1 compiled"

n_ok=$(sql g.db "select count(*) from results where error_text = 'compile-only' and registers > 0 and spill_stores = 0")
check "compiled without spills ($n_ok of 5)" test "$n_ok" = 5
n_err=$(sql g.db "select count(*) from results where status = 'compile_error'")
check "no compile errors ($n_err)" test "$n_err" = 0
n_name=$(sql g.db "select count(distinct lowered_name) from binaries where lowered_name = 'grouped_gemm_fp8'")
check "the kernel is grouped_gemm_fp8" test "$n_name" = 1

# Every field is an expression: bundled entries (SYNTHETIC times, lib.sh synth_ok) serve nearby
# problems, and the fallback ships for each layout and scaling of the tuned problems (SCALE_MODE is a
# define: contiguous has block, row and tensor problems here, masked block only).
synth_ok g.db
"$TUNE" bundle --recipe moe.grouped_fp8,moe.grouped_fp8_masked --db g.db -o g.bundle --arch sm_90a --no-ptx >bundle.txt 2>&1
check "bundle written" test $? -eq 0
check "no exact-only entry" lacks bundle.txt "exact-only"
n_fb=$(grep -c "^  fallback (" bundle.txt)
check "four fallback entries, one per layout and scaling ($n_fb)" test "$n_fb" = 4
finish
