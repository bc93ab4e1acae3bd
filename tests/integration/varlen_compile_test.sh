#!/usr/bin/env bash
# attention.varlen (recipes/attention/varlen.lua, templates/attention/prefill_sm90.cuh VARLEN=1):
# the recipe loads with its domain and fallback, its requires reject what cannot run, and one
# variant of each kind compiles with NVRTC (no GPU): the fallback (cp.async, strided rows), TMA
# with GQA packing and the batch-wide tile order, two lean blocks per SM, D 64 without GQA, not
# causal; and a bundle of them (synthetic times) is portable. The whole space is compiled by
# `tune run recipes/attention/varlen.lua --compile-only`.
. "$(dirname "$0")/lib.sh"
R="$SRC/recipes/attention/varlen.lua"
compile() { # compile OUT PROBLEM ONLY...
  local out=$1 prob=$2; shift 2
  local only=()
  for o in "$@"; do only+=(--only "$o"); done
  "$TUNE" run "$R" --compile-only --arch sm_90a --db v.db --problem "$prob" "${only[@]}" >"$out" 2>&1
}

compile tiny.txt b128t512hq32kv8d128c \
  BLOCK_N=128,CONSUMERS=2,STAGES=2,SCHED=0,PINGPONG=1,USE_TMA=0,GQA_PACK=0 \
  BLOCK_N=128,CONSUMERS=2,STAGES=3,SCHED=2,PINGPONG=1,USE_TMA=1,GQA_PACK=1 \
  BLOCK_N=64,CONSUMERS=1,OVERLAP=0,SCHED=1,MIN_BLOCKS=2,LEAN_PRODUCER=1,GQA_PACK=1
check "causal D 128 compiles" test $? -eq 0
check "the space after constraints" contains tiny.txt "attention.varlen: 144 of 2304 configs satisfy the constraints"
check "shared memory of two blocks per SM is a requires" contains tiny.txt "rejected 42: requires MIN_BLOCKS \* ("
check "three variants compiled" contains tiny.txt "compile: 3 compiled"
n_ok=$(sql v.db "select count(*) from results where error_text = 'compile-only' and registers > 0 and spill_stores = 0")
check "compiled without spills ($n_ok of 3)" test "$n_ok" = 3

compile d64.txt b32t8192hq16kv16d64c BLOCK_N=176,CONSUMERS=2,STAGES=2,SCHED=2,PINGPONG=0,USE_TMA=1
check "D 64 compiles" test $? -eq 0
check "no GQA: no packing" contains d64.txt "requires GQA_PACK == 0 or (HQ > HKV"
check "D 64 variants compiled" contains d64.txt "compile: 1 compiled"

compile nc.txt b32t16384hq32kv8d128 BLOCK_N=128,CONSUMERS=2,STAGES=2,PINGPONG=1,USE_TMA=1,GQA_PACK=1
check "not causal compiles" test $? -eq 0
check "not causal: one tile order" contains nc.txt "requires causal or SCHED == 0"

n_err=$(sql v.db "select count(*) from results where status = 'compile_error'")
check "no compile errors ($n_err)" test "$n_err" = 0

# Every field is an expression: bundled entries (SYNTHETIC times, lib.sh synth_ok) serve nearby
# problems, and the fallback is shipped for each set of defines (causal D 128, D 64, not causal).
synth_ok v.db
"$TUNE" bundle --recipe attention.varlen --db v.db -o v.bundle --arch sm_90a --no-ptx >bundle.txt 2>&1
check "bundle written" test $? -eq 0
check "no exact-only entry" lacks bundle.txt "exact-only"
n_fb=$(grep -c "^  fallback (" bundle.txt)
check "three fallback entries ($n_fb)" test "$n_fb" = 3
finish
