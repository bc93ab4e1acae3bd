#!/usr/bin/env bash
# rmsnorm.fp8 and rmsnorm.fp8_static (recipes/rmsnorm/fp8.lua, templates/rmsnorm/rmsnorm_fp8.cuh):
# the recipes load, their constraints and register model prune what spills, one variant of each
# kind compiles with NVRTC (no GPU) without spills: a row per warp with the slice in registers (16-,
# 8- and 4-byte vectors: y stored 8, 4 and 2 bytes at a time), a row per block re-reading it, the
# scalar path of an odd row, the static mode's weights loaded ahead (W_AHEAD); and a bundle of them (synthetic times) is portable. The whole space is
# compiled by `tune run recipes/rmsnorm/fp8.lua --compile-only`.
. "$(dirname "$0")/lib.sh"
R="$SRC/recipes/rmsnorm/fp8.lua"
ONLY=(--only ROW_MODE=0,BLOCK=128,VEC_BYTES=16,CACHE_ROW=1,CACHE_HINT=1,MIN_BLOCKS=1
      --only ROW_MODE=0,BLOCK=256,VEC_BYTES=8,CACHE_ROW=1,CACHE_HINT=0,MIN_BLOCKS=2
      --only ROW_MODE=1,BLOCK=512,VEC_BYTES=4,CACHE_ROW=1,CACHE_HINT=1,MIN_BLOCKS=1
      --only ROW_MODE=1,BLOCK=256,VEC_BYTES=16,CACHE_ROW=0,CACHE_HINT=1,MIN_BLOCKS=1
      --only ROW_MODE=1,BLOCK=1024,VEC_BYTES=4,CACHE_ROW=0,CACHE_HINT=0,MIN_BLOCKS=1
      --only ROW_MODE=1,BLOCK=256,VEC_BYTES=16,CACHE_ROW=1,CACHE_HINT=0,MIN_BLOCKS=1,W_AHEAD=1)
"$TUNE" run "$R" --compile-only --arch sm_90a --db n.db --problem t4096h8192_dynamic --problem t1000h2049_dynamic \
  --problem t16h7168_static "${ONLY[@]}" >run.txt 2>&1
check "compile-only run exits 0" test $? -eq 0
check "dynamic space" contains run.txt "rmsnorm.fp8: 104 of 192 configs satisfy the constraints"
check "static space (W_AHEAD doubles it, only with the slice in registers)" contains run.txt "rmsnorm.fp8_static: 174 of 384 configs satisfy the constraints"
check "the dynamic register model prunes" contains run.txt "does not fit the register cap"
n_err=$(sql n.db "select count(*) from results where status = 'compile_error'")
check "no compile errors ($n_err)" test "$n_err" = 0
n_ok=$(sql n.db "select count(*) from results where error_text = 'compile-only' and registers > 0")
n_spill=$(sql n.db "select count(*) from results where error_text = 'compile-only' and spill_stores > 0")
n_ahead=$(sql n.db "select count(*) from results r join configs c on c.id = r.config_id
  where r.error_text = 'compile-only' and r.registers > 0 and c.params_json like '%\"W_AHEAD\":1%'")
check "static weights loaded ahead compile ($n_ahead)" test "$n_ahead" -ge 1
check "variants compiled ($n_ok)" test "$n_ok" -ge 10
check "none spills ($n_spill)" test "$n_spill" = 0

# every field is an expression: bundled entries serve other problems, one fallback per define set
synth_ok n.db
"$TUNE" bundle --recipe rmsnorm.fp8,rmsnorm.fp8_static --db n.db -o n.bundle --arch sm_90a --no-ptx >bundle.txt 2>&1
check "bundle written" test $? -eq 0
check "no exact-only entry" lacks bundle.txt "exact-only"
check "a fallback entry" contains bundle.txt "fallback ("
finish
